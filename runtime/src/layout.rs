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

/// Calls `visit(row_major_index, stored_index)` for every element.
fn for_each_element(sizes: &[u64], dim_order: &[u8], mut visit: impl FnMut(usize, usize)) {
    let strides = strides(sizes, dim_order);
    let count = sizes.iter().product::<u64>() as usize;
    let mut index = vec![0u64; sizes.len()];
    for linear in 0..count {
        let stored: u64 = index.iter().zip(&strides).map(|(i, s)| i * s).sum();
        visit(linear, stored as usize);
        for axis in (0..sizes.len()).rev() {
            index[axis] += 1;
            if index[axis] < sizes[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
}

fn is_identity(dim_order: &[u8]) -> bool {
    dim_order
        .iter()
        .enumerate()
        .all(|(index, &dim)| index == dim as usize)
}

pub(crate) fn store_in_order(arena: &mut [u8], input: &TensorRef<'_>, dim_order: &[u8]) {
    if is_identity(dim_order) {
        arena[..input.data.len()].copy_from_slice(input.data);
        return;
    }
    let size = input.element.size();
    for_each_element(input.sizes, dim_order, |linear, stored| {
        arena[stored * size..(stored + 1) * size]
            .copy_from_slice(&input.data[linear * size..(linear + 1) * size]);
    });
}

/// The row-major bytes of `stored`, the elements (of `size` bytes) of a
/// tensor of `sizes` stored in `dim_order`, a permutation of the dimensions,
/// with `stored` exactly the tensor's bytes.
pub fn load_in_order(stored: &[u8], sizes: &[u64], size: usize, dim_order: &[u8]) -> Vec<u8> {
    if is_identity(dim_order) {
        return stored.to_vec();
    }
    let mut data = vec![0; stored.len()];
    for_each_element(sizes, dim_order, |linear, index| {
        data[linear * size..(linear + 1) * size]
            .copy_from_slice(&stored[index * size..(index + 1) * size]);
    });
    data
}
