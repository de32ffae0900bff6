//! The words of a SPIR-V module naga wrote, read as instructions, for the
//! passes that patch it (`exact.rs`, `texel.rs`).

/// The module header's words: magic, version, generator, bound, schema.
const HEADER_WORDS: usize = 5;

/// `OpCapability` (SPIR-V specification, section 3.49).
pub(super) const CAPABILITY: u32 = 17;

/// Where an instruction of a module starts, its opcode and its length in
/// words.
pub(super) struct Instruction {
    pub(super) at: usize,
    pub(super) op: u32,
    pub(super) count: usize,
}

/// The instructions of a module after its header, or `None` where a word
/// count is 0 or runs past the end (naga writes no such module).
pub(super) fn instructions(words: &[u32]) -> Option<Vec<Instruction>> {
    let mut found = Vec::new();
    let mut at = HEADER_WORDS;
    while at < words.len() {
        let count = (words[at] >> 16) as usize;
        if count == 0 || at + count > words.len() {
            return None;
        }
        found.push(Instruction {
            at,
            op: words[at] & 0xffff,
            count,
        });
        at += count;
    }
    Some(found)
}
