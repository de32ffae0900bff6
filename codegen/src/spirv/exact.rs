//! Marks every float add, subtract, multiply, divide and negate of a SPIR-V
//! module `NoContraction`, so that drivers neither fuse them into
//! multiply-adds nor reassociate them: each rounds as the CPU code's does,
//! which quantized programs (rounding onto an integer grid after a chain of
//! scale multiplications) depend on. naga has no way to say so in WGSL;
//! kernels that want a fused multiply-add call WGSL's `fma` instead.

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
}

const HEADER_WORDS: usize = 5;

/// Adds the decorations. `words` is a module naga wrote, so its
/// instructions are well formed; a malformed one is returned unchanged.
pub(super) fn mark_exact(words: Vec<u32>) -> Vec<u32> {
    let mut results = Vec::new();
    let mut insert_at = None;
    let mut at = HEADER_WORDS;
    while at < words.len() {
        let count = (words[at] >> 16) as usize;
        let op = words[at] & 0xffff;
        if count == 0 || at + count > words.len() {
            return words;
        }
        if insert_at.is_none() && !opcode::precedes_annotations(op) && !opcode::is_annotation(op) {
            insert_at = Some(at);
        }
        if opcode::FLOAT_ARITHMETIC.contains(&op) && count >= 3 {
            results.push(words[at + 2]);
        }
        at += count;
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
