//! Reads a `.bpte` bundled program: the embedded `.pte` and its test suites.

use ptec_schema::bundled as fb;

use crate::bytes::{expect_identifier, verifier_options};
use crate::error::{Error, Result};
use crate::model::Program;
use crate::ptd::DataFile;
use crate::pte::{byte_count, check_dim_order, read_program_with_data, vec_of, vec_of_scalars};
use crate::scalar_type::ScalarType;

/// A bundled program: a program plus test cases.
#[derive(Debug)]
pub struct BundledProgram<'a> {
    pub version: u32,
    pub program: Program<'a>,
    /// The bytes of the embedded program (a `.pte` of its own).
    pub program_bytes: &'a [u8],
    pub test_suites: Vec<TestSuite<'a>>,
}

/// The test cases of one method, to be run in order on one instance.
#[derive(Debug)]
pub struct TestSuite<'a> {
    pub method: String,
    pub cases: Vec<TestCase<'a>>,
}

#[derive(Debug)]
pub struct TestCase<'a> {
    /// In the method's input order.
    pub inputs: Vec<TestValue<'a>>,
    /// In the method's output order.
    pub expected_outputs: Vec<TestValue<'a>>,
}

#[derive(Debug, Clone)]
pub enum TestValue<'a> {
    Tensor(TestTensor<'a>),
    Int(i64),
    Bool(bool),
    Double(f64),
}

/// A test tensor: raw little-endian bytes laid out in `dim_order`.
#[derive(Debug, Clone)]
pub struct TestTensor<'a> {
    pub dtype: ScalarType,
    pub sizes: Vec<i64>,
    pub dim_order: Vec<u8>,
    pub data: &'a [u8],
}

/// Reads a `.bpte` bundled program from `bytes`, borrowing its data.
pub fn read_bundled_program(bytes: &[u8]) -> Result<BundledProgram<'_>> {
    read_bundled_program_with_data(bytes, &[])
}

/// Reads a bundled program whose embedded program keeps data in the data
/// files `data` (see [`read_program_with_data`]).
pub fn read_bundled_program_with_data<'a>(
    bytes: &'a [u8],
    data: &[DataFile<'a>],
) -> Result<BundledProgram<'a>> {
    if bytes.len() < 8 {
        return Err(Error::Truncated {
            what: "bundled program",
            needed: 8,
            available: bytes.len() as u64,
        });
    }
    expect_identifier(bytes, &[b"BP08"], "bundled program")?;
    let root = flatbuffers::root_with_opts::<fb::BundledProgram>(&verifier_options(), bytes)
        .map_err(|source| Error::Flatbuffer {
            what: "bundled program".to_string(),
            source,
        })?;
    let program_bytes = root
        .program()
        .ok_or_else(|| Error::invalid("program", "the bundled program holds no program"))?
        .bytes();
    let offset = program_bytes.as_ptr() as u64 - bytes.as_ptr() as u64;
    let program =
        read_program_with_data(program_bytes, data).map_err(|source| Error::InBundle {
            offset,
            source: Box::new(source),
        })?;
    let test_suites = vec_of(root.method_test_suites())
        .enumerate()
        .map(|(index, suite)| read_suite(&program, suite, index))
        .collect::<Result<Vec<_>>>()?;
    Ok(BundledProgram {
        version: root.version(),
        program,
        program_bytes,
        test_suites,
    })
}

fn read_suite<'a>(
    program: &Program<'_>,
    suite: fb::BundledMethodTestSuite<'a>,
    index: usize,
) -> Result<TestSuite<'a>> {
    let path = format!("method_test_suites[{index}]");
    let method_name = suite
        .method_name()
        .ok_or_else(|| Error::invalid(path.clone(), "the suite names no method"))?;
    let method = program.method(method_name).ok_or_else(|| {
        Error::invalid(
            path.clone(),
            format!("the program has no method {method_name:?}"),
        )
    })?;
    let cases = vec_of(suite.test_cases())
        .enumerate()
        .map(|(case_index, case)| {
            let case_path = format!("{path}.test_cases[{case_index}]");
            let inputs = read_values(case.inputs(), &format!("{case_path}.inputs"))?;
            let expected_outputs = read_values(
                case.expected_outputs(),
                &format!("{case_path}.expected_outputs"),
            )?;
            for (what, count, want) in [
                ("inputs", inputs.len(), method.inputs.len()),
                (
                    "expected outputs",
                    expected_outputs.len(),
                    method.outputs.len(),
                ),
            ] {
                if count != want {
                    return Err(Error::invalid(
                        case_path,
                        format!(
                            "the case has {count} {what} but method {method_name:?} has {want}"
                        ),
                    ));
                }
            }
            Ok(TestCase {
                inputs,
                expected_outputs,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(TestSuite {
        method: method_name.to_string(),
        cases,
    })
}

fn read_values<'a>(
    values: Option<flatbuffers::Vector<'a, flatbuffers::ForwardsUOffset<fb::Value<'a>>>>,
    path: &str,
) -> Result<Vec<TestValue<'a>>> {
    vec_of(values)
        .enumerate()
        .map(|(index, value)| {
            let at = || format!("{path}[{index}]");
            let kind = value.val_type();
            let missing = || {
                Error::invalid(
                    at(),
                    format!("the value's union tag {} has no table", kind.0),
                )
            };
            Ok(match kind {
                fb::ValueUnion::Tensor => TestValue::Tensor(read_tensor(
                    value.val_as_tensor().ok_or_else(missing)?,
                    &at,
                )?),
                fb::ValueUnion::Int => {
                    TestValue::Int(value.val_as_int().ok_or_else(missing)?.int_val())
                }
                fb::ValueUnion::Bool => {
                    TestValue::Bool(value.val_as_bool().ok_or_else(missing)?.bool_val())
                }
                fb::ValueUnion::Double => {
                    TestValue::Double(value.val_as_double().ok_or_else(missing)?.double_val())
                }
                other => {
                    return Err(Error::invalid(
                        at(),
                        format!("unknown value kind (union tag {})", other.0),
                    ));
                }
            })
        })
        .collect()
}

fn read_tensor<'a>(tensor: fb::Tensor<'a>, at: &dyn Fn() -> String) -> Result<TestTensor<'a>> {
    let code = tensor.scalar_type().0;
    let dtype = ScalarType::decode(code, at)?;
    let sizes: Vec<i64> = vec_of_scalars(tensor.sizes()).map(i64::from).collect();
    let dim_order = tensor
        .dim_order()
        .map(|order| order.bytes().to_vec())
        .unwrap_or_default();
    check_dim_order(&dim_order, sizes.len(), at)?;
    let nbytes = byte_count(&sizes, dtype, at)?;
    let data = tensor.data().map_or(&[][..], |data| data.bytes());
    if data.len() as u64 != nbytes {
        return Err(Error::ByteCount {
            at: at(),
            problem: format!(
                "a {dtype} tensor of sizes {sizes:?} needs {nbytes} bytes but its data holds {}",
                data.len()
            ),
        });
    }
    Ok(TestTensor {
        dtype,
        sizes,
        dim_order,
        data,
    })
}
