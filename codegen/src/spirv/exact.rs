//! Marks every float add, subtract, multiply, divide and negate of a SPIR-V
//! module `NoContraction`, so that drivers neither fuse them into
//! multiply-adds nor reassociate them: each rounds as the CPU code's does,
//! which quantized programs (rounding onto an integer grid after a chain of
//! scale multiplications) depend on. naga has no way to say so in WGSL;
//! kernels that want a fused multiply-add call WGSL's `fma` instead.
//! It also declares that 32-bit floats keep NaN, infinities and signed
//! zeros (`SignedZeroInfNanPreserve`, SPV_KHR_float_controls): without it a
//! driver may assume there are none, and NVIDIA's did (a NaN through relu,
//! clamp or a NaN-keeping max came out a number, a reciprocal of zero NaN).

use super::words::{CAPABILITY, Instruction, instructions};

/// Instruction opcodes (SPIR-V specification, section 3.49).
mod opcode {
    pub const DECORATE: u32 = 71;
    pub const DECORATION_NO_CONTRACTION: u32 = 42;
    /// OpFNegate, OpFAdd, OpFSub, OpFMul, OpFDiv, OpFRem, OpFMod,
    /// OpVectorTimesScalar.
    pub const FLOAT_ARITHMETIC: [u32; 8] = [127, 129, 131, 133, 136, 140, 141, 142];
    /// Instructions that precede annotations: capabilities, extensions,
    /// imports, the memory model, entry points, execution modes and debug
    /// information.
    pub fn precedes_annotations(op: u32) -> bool {
        matches!(op, 1..=8 | 10 | 11 | 14..=17 | 330 | 331)
    }
    pub fn is_annotation(op: u32) -> bool {
        matches!(op, 71..=75 | 332 | 5632 | 5633)
    }
    pub const EXTENSION: u32 = 10;
    pub const ENTRY_POINT: u32 = 15;
    pub const EXECUTION_MODE: u32 = 16;
    pub const CAPABILITY_SIGNED_ZERO_INF_NAN_PRESERVE: u32 = 4466;
    pub const MODE_SIGNED_ZERO_INF_NAN_PRESERVE: u32 = 4461;
}

/// A string operand: UTF-8, NUL-terminated, padded to whole words.
fn string_words(text: &str) -> Vec<u32> {
    let mut bytes = text.as_bytes().to_vec();
    bytes.push(0);
    bytes.resize(bytes.len().div_ceil(4) * 4, 0);
    bytes
        .chunks_exact(4)
        .map(|word| u32::from_le_bytes([word[0], word[1], word[2], word[3]]))
        .collect()
}

/// Declares NaN, infinity and signed-zero preservation for 32-bit floats on
/// every entry point: the capability after naga's, the extension after
/// them, the execution mode after the entry points. A module without
/// capabilities or entry points is returned unchanged.
pub(super) fn preserve_special_floats(words: Vec<u32>) -> Vec<u32> {
    let mut after_capabilities = None;
    let mut after_entry_points = None;
    let mut entry_points = Vec::new();
    let Some(instructions) = instructions(&words) else {
        return words;
    };
    for Instruction { at, op, count } in instructions {
        match op {
            CAPABILITY => after_capabilities = Some(at + count),
            opcode::ENTRY_POINT if count >= 3 => {
                entry_points.push(words[at + 2]);
                after_entry_points = Some(at + count);
            }
            _ => {}
        }
    }
    let (Some(capabilities), Some(modes)) = (after_capabilities, after_entry_points) else {
        return words;
    };
    let name = string_words("SPV_KHR_float_controls");
    let mut out = Vec::with_capacity(words.len() + 8 + name.len() + 4 * entry_points.len());
    out.extend_from_slice(&words[..capabilities]);
    out.extend_from_slice(&[
        (2 << 16) | CAPABILITY,
        opcode::CAPABILITY_SIGNED_ZERO_INF_NAN_PRESERVE,
    ]);
    out.push(((1 + name.len() as u32) << 16) | opcode::EXTENSION);
    out.extend_from_slice(&name);
    out.extend_from_slice(&words[capabilities..modes]);
    for entry in entry_points {
        out.extend_from_slice(&[
            (4 << 16) | opcode::EXECUTION_MODE,
            entry,
            opcode::MODE_SIGNED_ZERO_INF_NAN_PRESERVE,
            32,
        ]);
    }
    out.extend_from_slice(&words[modes..]);
    out
}

/// Adds the decorations. `words` is a module naga wrote, so its
/// instructions are well formed; a malformed one is returned unchanged.
pub(super) fn mark_exact(words: Vec<u32>) -> Vec<u32> {
    let mut results = Vec::new();
    let mut insert_at = None;
    let Some(instructions) = instructions(&words) else {
        return words;
    };
    for Instruction { at, op, count } in instructions {
        if insert_at.is_none() && !opcode::precedes_annotations(op) && !opcode::is_annotation(op) {
            insert_at = Some(at);
        }
        if opcode::FLOAT_ARITHMETIC.contains(&op) && count >= 3 {
            results.push(words[at + 2]);
        }
    }
    let Some(insert_at) = insert_at else {
        return words;
    };
    let mut marked = Vec::with_capacity(words.len() + 3 * results.len());
    marked.extend_from_slice(&words[..insert_at]);
    for id in results {
        marked.extend_from_slice(&[
            (3 << 16) | opcode::DECORATE,
            id,
            opcode::DECORATION_NO_CONTRACTION,
        ]);
    }
    marked.extend_from_slice(&words[insert_at..]);
    marked
}
