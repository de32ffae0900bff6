//! Tensors in numpy's `.npy` format, read and written with npyz (float16 as
//! the `half` crate's `f16`). numpy has no bfloat16, so bfloat16 tensors are
//! written widened to float32, which every bfloat16 is exactly.

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::Path;

use anyhow::{Context as _, bail};
use npyz::WriterBuilder as _;
use ptec_runtime::{ElementType, HostTensor};

/// Calls `$body` with `$t` bound to the Rust type of an element type.
macro_rules! with_element_type {
    ($element:expr, $t:ident => $body:expr) => {
        match $element {
            ElementType::Bool => {
                type $t = bool;
                $body
            }
            ElementType::U8 => {
                type $t = u8;
                $body
            }
            ElementType::I8 => {
                type $t = i8;
                $body
            }
            ElementType::I16 => {
                type $t = i16;
                $body
            }
            ElementType::I32 => {
                type $t = i32;
                $body
            }
            ElementType::I64 => {
                type $t = i64;
                $body
            }
            ElementType::F16 => {
                type $t = half::f16;
                $body
            }
            ElementType::F32 => {
                type $t = f32;
                $body
            }
            ElementType::F64 => {
                type $t = f64;
                $body
            }
            other => bail!("{other} tensors cannot be read or written as .npy by ptec"),
        }
    };
}

/// The element type of a numpy type string (`<f4`, `|b1`, ...).
fn element_of(descr: &str) -> Option<ElementType> {
    Some(match descr {
        "|b1" => ElementType::Bool,
        "|u1" => ElementType::U8,
        "|i1" => ElementType::I8,
        "<i2" => ElementType::I16,
        "<i4" => ElementType::I32,
        "<i8" => ElementType::I64,
        "<f2" => ElementType::F16,
        "<f4" => ElementType::F32,
        "<f8" => ElementType::F64,
        _ => return None,
    })
}

fn descr_of(element: ElementType) -> &'static str {
    match element {
        ElementType::Bool => "|b1",
        ElementType::U8 => "|u1",
        ElementType::I8 => "|i1",
        ElementType::I16 => "<i2",
        ElementType::I32 => "<i4",
        ElementType::I64 => "<i8",
        ElementType::F16 => "<f2",
        ElementType::BF16 => "<V2",
        ElementType::F32 => "<f4",
        ElementType::F64 => "<f8",
    }
}

/// A little-endian element that goes to and from bytes.
trait Element: Sized + Copy {
    fn to_bytes(self, out: &mut Vec<u8>);
    fn from_bytes(bytes: &[u8]) -> Self;
}

macro_rules! element {
    ($($t:ty),*) => {$(
        impl Element for $t {
            fn to_bytes(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn from_bytes(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(bytes.try_into().expect("one element's bytes"))
            }
        }
    )*};
}
element!(u8, i8, i16, i32, i64, half::f16, f32, f64);

impl Element for bool {
    fn to_bytes(self, out: &mut Vec<u8>) {
        out.push(u8::from(self));
    }
    fn from_bytes(bytes: &[u8]) -> Self {
        bytes[0] != 0
    }
}

pub fn read(path: &Path) -> anyhow::Result<HostTensor> {
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let npy = npyz::NpyFile::new(BufReader::new(file))
        .with_context(|| format!("{} is not a .npy file", path.display()))?;
    if npy.order() == npyz::Order::Fortran {
        bail!(
            "{}: Fortran-ordered arrays are not supported; save it C-ordered",
            path.display()
        );
    }
    let descr = match npy.dtype() {
        npyz::DType::Plain(type_str) => type_str.to_string(),
        other => bail!(
            "{}: numpy type {} is not supported",
            path.display(),
            other.descr()
        ),
    };
    let element = element_of(&descr)
        .with_context(|| format!("{}: numpy type {descr} is not supported", path.display()))?;
    let sizes = npy.shape().to_vec();
    let mut data = Vec::new();
    with_element_type!(element, T => {
        for value in npy.into_vec::<T>().with_context(|| format!("cannot read {}", path.display()))? {
            value.to_bytes(&mut data);
        }
    });
    Ok(HostTensor {
        element,
        sizes,
        data,
    })
}

pub fn write(path: &Path, tensor: &HostTensor) -> anyhow::Result<()> {
    if tensor.element == ElementType::BF16 {
        return write(path, &widen_bf16(tensor));
    }
    let file = File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let descr: npyz::TypeStr = descr_of(tensor.element)
        .parse()
        .context("numpy type string")?;
    with_element_type!(tensor.element, T => {
        let size = size_of::<T>();
        let mut writer = npyz::WriteOptions::new()
            .dtype(npyz::DType::Plain(descr))
            .shape(&tensor.sizes)
            .writer(BufWriter::new(file))
            .begin_nd()?;
        writer.extend(tensor.data.chunks_exact(size).map(T::from_bytes))?;
        writer.finish()?;
    });
    Ok(())
}

/// A bfloat16 tensor as the float32 tensor of the same values.
fn widen_bf16(tensor: &HostTensor) -> HostTensor {
    let data = tensor
        .data
        .chunks_exact(2)
        .flat_map(|bits| {
            let bits = u32::from(u16::from_le_bytes([bits[0], bits[1]])) << 16;
            f32::from_bits(bits).to_le_bytes()
        })
        .collect();
    HostTensor {
        element: ElementType::F32,
        sizes: tensor.sizes.clone(),
        data,
    }
}
