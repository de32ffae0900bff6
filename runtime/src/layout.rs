//! Between row-major host tensors and data stored in a dim order (for
//! example channels-last): the copies the runtime makes at a method's
//! boundary.

use crate::instance::TensorRef;

/// Strides (in elements) of a tensor of `sizes` stored in `dim_order`.
fn strides(sizes: &[u64], dim_order: &[u8]) -> Vec<u64> {
    let mut strides = vec![0; sizes.len()];
    let mut stride = 1;
    for &dim in dim_order.iter().rev() {
        strides[dim as usize] = stride;
        stride *= sizes[dim as usize];
    }
    strides
}

/// Calls `visit(row_major_index, stored_index)` for every element, a row of
/// the innermost dimension at a time: each row's first stored index is
/// computed once and the row steps by its stride.
fn for_each_element(sizes: &[u64], dim_order: &[u8], mut visit: impl FnMut(usize, usize)) {
    let strides = strides(sizes, dim_order);
    if sizes.contains(&0) {
        return;
    }
    let Some(last) = sizes.len().checked_sub(1) else {
        return visit(0, 0);
    };
    let (row, step) = (sizes[last] as usize, strides[last] as usize);
    let mut outer = vec![0u64; last];
    let mut linear = 0;
    loop {
        let first: u64 = outer.iter().zip(&strides).map(|(i, s)| i * s).sum();
        let first = first as usize;
        for column in 0..row {
            visit(linear + column, first + column * step);
        }
        linear += row;
        let mut axis = last;
        loop {
            let Some(previous) = axis.checked_sub(1) else {
                return;
            };
            axis = previous;
            outer[axis] += 1;
            if outer[axis] < sizes[axis] {
                break;
            }
            outer[axis] = 0;
        }
    }
}

fn is_identity(dim_order: &[u8]) -> bool {
    dim_order
        .iter()
        .enumerate()
        .all(|(index, &dim)| index == dim as usize)
}

/// Copies each element of `N` bytes from `from` to `to`: from row-major
/// into the stored order when `into_stored`, else the other way.
fn reorder<const N: usize>(
    from: &[u8],
    to: &mut [u8],
    sizes: &[u64],
    dim_order: &[u8],
    into_stored: bool,
) {
    for_each_element(sizes, dim_order, |linear, stored| {
        let (source, target) = match into_stored {
            true => (linear, stored),
            false => (stored, linear),
        };
        to[target * N..][..N].copy_from_slice(&from[source * N..][..N]);
    });
}

/// [`reorder`] for elements of `size` bytes (an [`crate::ElementType`]'s:
/// 1, 2, 4 or 8), each copied as one fixed-size value.
fn reorder_elements(
    from: &[u8],
    to: &mut [u8],
    (sizes, size): (&[u64], usize),
    dim_order: &[u8],
    into_stored: bool,
) {
    let copy = match size {
        1 => reorder::<1>,
        2 => reorder::<2>,
        4 => reorder::<4>,
        8 => reorder::<8>,
        _ => unreachable!("no element type is {size} bytes"),
    };
    copy(from, to, sizes, dim_order, into_stored);
}

pub(crate) fn store_in_order(arena: &mut [u8], input: &TensorRef<'_>, dim_order: &[u8]) {
    if is_identity(dim_order) {
        arena[..input.data.len()].copy_from_slice(input.data);
        return;
    }
    let sizes = (input.sizes, input.element.size());
    reorder_elements(input.data, arena, sizes, dim_order, true);
}

pub(crate) fn load_in_order(
    stored: &[u8],
    sizes: &[u64],
    size: usize,
    dim_order: &[u8],
) -> Vec<u8> {
    if is_identity(dim_order) {
        return stored.to_vec();
    }
    let mut data = vec![0; stored.len()];
    reorder_elements(stored, &mut data, (sizes, size), dim_order, false);
    data
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ElementType;

    /// An NCHW [2, 3, 4, 5] tensor of i16 stored channels-last: element
    /// (n, c, h, w) lands at ((n * 4 + h) * 5 + w) * 3 + c, and loading the
    /// stored bytes gives the row-major tensor back.
    #[test]
    fn channels_last_stores_each_pixel_s_channels_together_and_loads_back() {
        let sizes = [2u64, 3, 4, 5];
        let values: Vec<i16> = (0..120).collect();
        let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let input = TensorRef {
            element: ElementType::I16,
            sizes: &sizes,
            data: &data,
        };
        let order = [0, 2, 3, 1];
        let mut stored = vec![0u8; data.len()];
        store_in_order(&mut stored, &input, &order);
        for (linear, &value) in values.iter().enumerate() {
            let (n, c, h, w) = (linear / 60, linear / 20 % 3, linear / 5 % 4, linear % 5);
            let at = ((n * 4 + h) * 5 + w) * 3 + c;
            let got = i16::from_le_bytes([stored[2 * at], stored[2 * at + 1]]);
            assert_eq!(got, value, "element ({n}, {c}, {h}, {w})");
        }
        assert_eq!(load_in_order(&stored, &sizes, 2, &order), data);
    }

    /// A scalar is one element, and an empty tensor none.
    #[test]
    fn scalars_and_empty_tensors_reorder() {
        let mut visited = Vec::new();
        for_each_element(&[], &[], |linear, stored| visited.push((linear, stored)));
        assert_eq!(visited, [(0, 0)]);
        for_each_element(&[2, 0, 3], &[2, 0, 1], |_, _| panic!("no element"));
    }
}
