//! Just enough SPIR-V reading to refuse a module before a driver sees it.
//! Drivers do not validate SPIR-V, and a malformed module can crash them, so
//! every module is walked instruction by instruction first: the header, each
//! instruction's word count, and the compute entry point named `main` with
//! the workgroup size it bakes in (which the device's limits must allow).

use thiserror::Error;

/// The first word of every SPIR-V module, in the module's byte order.
const MAGIC: u32 = 0x0723_0203;
/// Magic number, version, generator, id bound, schema.
const HEADER_WORDS: usize = 5;
const OP_ENTRY_POINT: u16 = 15;
const OP_EXECUTION_MODE: u16 = 16;
const EXECUTION_MODEL_GL_COMPUTE: u32 = 5;
const EXECUTION_MODE_LOCAL_SIZE: u32 = 17;

/// Why a SPIR-V module is refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SpirvError {
    #[error("{bytes} bytes are not a whole number of 4-byte words")]
    NotWords { bytes: usize },

    #[error("{words} words are fewer than the {HEADER_WORDS}-word header")]
    TooShort { words: usize },

    #[error("word 0 is {found:#010x}, not the SPIR-V magic number {MAGIC:#010x}")]
    BadMagic { found: u32 },

    #[error("the instruction at word {at} has a word count of {count}, but {left} words are left")]
    BadWordCount {
        at: usize,
        count: usize,
        left: usize,
    },

    #[error("there is no compute (GLCompute) entry point named \"main\"")]
    NoComputeMain,
}

/// What the runtime needs to know of a module's `main` compute entry point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ComputeEntry {
    /// The `LocalSize` execution mode, when the module states it as
    /// literals (a size given by specialization constants is not known here).
    pub workgroup_size: Option<[u32; 3]>,
}

/// Reads a SPIR-V module from bytes, in the byte order its magic number
/// shows (SPIR-V may be stored either way round).
pub fn spirv_from_bytes(bytes: &[u8]) -> Result<Vec<u32>, SpirvError> {
    if !bytes.len().is_multiple_of(4) {
        return Err(SpirvError::NotWords { bytes: bytes.len() });
    }
    let mut words: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|word| u32::from_le_bytes([word[0], word[1], word[2], word[3]]))
        .collect();
    if words.first() == Some(&MAGIC.swap_bytes()) {
        words.iter_mut().for_each(|word| *word = word.swap_bytes());
    }
    Ok(words)
}

/// Walks a module's instructions and finds its `main` compute entry point.
pub(crate) fn compute_entry(words: &[u32]) -> Result<ComputeEntry, SpirvError> {
    if words.len() < HEADER_WORDS {
        return Err(SpirvError::TooShort { words: words.len() });
    }
    if words[0] != MAGIC {
        return Err(SpirvError::BadMagic { found: words[0] });
    }
    let mut main_id = None;
    let mut local_sizes = Vec::new();
    let mut at = HEADER_WORDS;
    while at < words.len() {
        let count = (words[at] >> 16) as usize;
        let left = words.len() - at;
        if count == 0 || count > left {
            return Err(SpirvError::BadWordCount { at, count, left });
        }
        let operands = &words[at + 1..at + count];
        match (words[at] & 0xffff) as u16 {
            OP_ENTRY_POINT => {
                if let [EXECUTION_MODEL_GL_COMPUTE, id, name @ ..] = operands
                    && literal_string_is(name, b"main")
                {
                    main_id = Some(*id);
                }
            }
            OP_EXECUTION_MODE => {
                if let [id, EXECUTION_MODE_LOCAL_SIZE, x, y, z] = operands {
                    local_sizes.push((*id, [*x, *y, *z]));
                }
            }
            _ => {}
        }
        at += count;
    }
    let main_id = main_id.ok_or(SpirvError::NoComputeMain)?;
    let workgroup_size = local_sizes
        .into_iter()
        .find_map(|(id, size)| (id == main_id).then_some(size));
    Ok(ComputeEntry { workgroup_size })
}

/// Whether a SPIR-V literal string (UTF-8 bytes packed four to a word, low
/// byte first, ending with a nul byte) at the start of `words` is `wanted`.
fn literal_string_is(words: &[u32], wanted: &[u8]) -> bool {
    let mut bytes = words.iter().flat_map(|word| word.to_le_bytes());
    wanted.iter().all(|byte| bytes.next() == Some(*byte)) && bytes.next() == Some(0)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// One instruction: its word count and opcode, then its operands.
    fn instruction(opcode: u16, operands: &[u32]) -> Vec<u32> {
        let count = u32::try_from(operands.len() + 1).expect("small instruction");
        let mut words = vec![count << 16 | u32::from(opcode)];
        words.extend_from_slice(operands);
        words
    }

    fn module(instructions: &[Vec<u32>]) -> Vec<u32> {
        let mut words = vec![MAGIC, 0x0001_0300, 0, 10, 0];
        instructions.iter().for_each(|i| words.extend_from_slice(i));
        words
    }

    /// "main" and its nul terminator, packed into words.
    fn main_name() -> [u32; 2] {
        [u32::from_le_bytes(*b"main"), 0]
    }

    /// A module whose `main` compute entry point has workgroups of `size`
    /// (and no code: enough for the checks, not for a driver).
    pub(crate) fn compute_shader(size: [u32; 3]) -> Vec<u32> {
        let [main0, main1] = main_name();
        module(&[
            instruction(
                OP_ENTRY_POINT,
                &[EXECUTION_MODEL_GL_COMPUTE, 7, main0, main1, 3],
            ),
            instruction(
                OP_EXECUTION_MODE,
                &[7, EXECUTION_MODE_LOCAL_SIZE, size[0], size[1], size[2]],
            ),
        ])
    }

    #[test]
    fn finds_main_and_its_workgroup_size() {
        let words = compute_shader([64, 2, 1]);
        assert_eq!(
            compute_entry(&words),
            Ok(ComputeEntry {
                workgroup_size: Some([64, 2, 1])
            })
        );
    }

    #[test]
    fn main_must_be_a_compute_entry_point() {
        let [main0, main1] = main_name();
        let vertex = 0;
        let words = module(&[instruction(OP_ENTRY_POINT, &[vertex, 7, main0, main1])]);
        assert_eq!(compute_entry(&words), Err(SpirvError::NoComputeMain));
        let mainly = [u32::from_le_bytes(*b"main"), u32::from_le_bytes(*b"ly\0\0")];
        let words = module(&[instruction(
            OP_ENTRY_POINT,
            &[EXECUTION_MODEL_GL_COMPUTE, 7, mainly[0], mainly[1]],
        )]);
        assert_eq!(compute_entry(&words), Err(SpirvError::NoComputeMain));
    }

    #[test]
    fn refuses_bad_headers_and_word_counts() {
        assert_eq!(
            compute_entry(&[MAGIC, 0]),
            Err(SpirvError::TooShort { words: 2 })
        );
        let mut words = module(&[]);
        words[0] = 0xdead_beef;
        assert_eq!(
            compute_entry(&words),
            Err(SpirvError::BadMagic { found: 0xdead_beef })
        );
        let words = module(&[vec![3 << 16 | u32::from(OP_ENTRY_POINT), 5]]);
        assert_eq!(
            compute_entry(&words),
            Err(SpirvError::BadWordCount {
                at: 5,
                count: 3,
                left: 2
            })
        );
        let words = module(&[vec![0]]);
        assert_eq!(
            compute_entry(&words),
            Err(SpirvError::BadWordCount {
                at: 5,
                count: 0,
                left: 1
            })
        );
    }

    #[test]
    fn reads_bytes_in_either_order() {
        let little: Vec<u8> = [MAGIC, 1].iter().flat_map(|w| w.to_le_bytes()).collect();
        let big: Vec<u8> = [MAGIC, 1].iter().flat_map(|w| w.to_be_bytes()).collect();
        assert_eq!(spirv_from_bytes(&little), Ok(vec![MAGIC, 1]));
        assert_eq!(spirv_from_bytes(&big), Ok(vec![MAGIC, 1]));
        assert_eq!(
            spirv_from_bytes(&little[..7]),
            Err(SpirvError::NotWords { bytes: 7 })
        );
    }
}
