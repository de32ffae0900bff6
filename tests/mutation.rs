//! Mutation tests of the reader of untrusted files: real `.bpte` files (the
//! fixtures and the small files of the shared corpus) and the `.pte` programs
//! embedded in them are truncated, bit-flipped, overwritten with garbage and
//! given wrong lengths and offsets, and every mutant must be read to `Ok` or
//! `Err` — never a panic, never a hang — and `ptec inspect` must exit 0 or 1
//! (with an `error:` message) on it, never die of a signal.
//!
//! The mutations are deterministic (a fixed-seed splitmix64 generator), so a
//! failure names a file, a mutation family and an index that reproduce it.

mod common;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::fs::{self, File};
use std::ops::Range;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use ptec_frontend::{
    DelegatePayload, ExecutorchFile, Instruction, Method, Tensor, TensorStorage, TestValue, Value,
    ValueIndex,
};

/// The corpus files small enough to mutate thousands of times.
const SMALL_CORPUS_MODELS: &[&str] = &[
    "add",
    "cond",
    "counter",
    "dyn_batch",
    "embed",
    "small_cnn",
    "mlp",
];

/// A single read taking longer than this is a hang.
const READ_TIME_LIMIT: Duration = Duration::from_secs(5);

/// A `ptec inspect` process running longer than this is a hang.
const PROCESS_TIME_LIMIT: Duration = Duration::from_secs(10);

/// Seed of every generator (xored with a hash of the file's name).
const SEED: u64 = 0x5eed_f00d_97ec;

// ---------------------------------------------------------------------------
// A deterministic generator.

/// splitmix64: small, fast and good enough to pick positions and bytes.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..bound` (`bound` > 0; the bias is irrelevant here).
    fn below(&mut self, bound: usize) -> usize {
        (self.next_u64() % bound as u64) as usize
    }

    fn byte(&mut self) -> u8 {
        self.next_u64() as u8
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.byte()).collect()
    }

    /// A position in one of `regions`, weighted by their lengths.
    fn position_in(&mut self, regions: &[Range<usize>]) -> usize {
        let total: usize = regions.iter().map(ExactSizeIterator::len).sum();
        let mut pick = self.below(total.max(1));
        for region in regions {
            if pick < region.len() {
                return region.start + pick;
            }
            pick -= region.len();
        }
        0
    }
}

/// FNV-1a, to tell files apart and to seed per-file generators.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

// ---------------------------------------------------------------------------
// The files to mutate and what we know about their layout.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Bundled,
    Program,
}

/// The fixed header of an XNNPACK (`XH00`) or Vulkan (`VH00`) payload.
#[derive(Debug)]
struct PayloadHeader {
    /// Absolute start of the payload in the file.
    start: usize,
    len: usize,
    tag: [u8; 4],
    /// Absolute range of the graph flatbuffer the header points at.
    flatbuffer: Range<usize>,
}

/// A valid file to mutate, with the landmarks the mutations aim at.
#[derive(Debug)]
struct Base {
    name: String,
    kind: Kind,
    bytes: Vec<u8>,
    /// Where the `.pte` program lies: the whole file, or the program vector
    /// of a bundled program.
    program: Range<usize>,
    /// Absolute position of the program's `eh00` magic (its fields follow),
    /// when the program has the header.
    extended_header: Option<usize>,
    /// Absolute end of the program's flatbuffer (`program_size`).
    program_end: usize,
    /// Absolute start of the segment area (`segment_base_offset`).
    segment_base: Option<usize>,
    /// Absolute byte ranges of the program's segments.
    segments: Vec<Range<usize>>,
    payloads: Vec<PayloadHeader>,
    /// Flatbuffer tables and other structure: everything outside segment
    /// data, plus the delegate graphs inside it.
    tables: Vec<Range<usize>>,
    /// Every truncation shorter than this cuts data the file needs.
    needed_len: usize,
    xnnpack_delegates: usize,
    vulkan_delegates: usize,
}

impl Base {
    /// Reads `bytes` (which must be valid) and finds its landmarks.
    fn new(name: String, bytes: Vec<u8>) -> Result<Base, String> {
        let file = ExecutorchFile::read(&bytes).map_err(|error| format!("{name}: {error}"))?;
        let address = |data: &[u8]| data.as_ptr() as usize - bytes.as_ptr() as usize;
        let (kind, program) = match &file {
            ExecutorchFile::Program(_) => (Kind::Program, 0..bytes.len()),
            ExecutorchFile::Bundled(_) => {
                let root = ptec_schema::bundled::root_as_bundled_program(&bytes)
                    .map_err(|error| format!("{name}: {error}"))?;
                let inner = root
                    .program()
                    .ok_or_else(|| format!("{name}: no program"))?
                    .bytes();
                let start = address(inner);
                (Kind::Bundled, start..start + inner.len())
            }
        };
        let parsed = file.program();
        let (extended_header, program_end, segment_base, needed_len) = match parsed.header {
            Some(header) => {
                let base = program.start + header.segment_base_offset as usize;
                let needed = header
                    .segment_data_size
                    .map_or(base, |size| base + size as usize);
                (
                    Some(program.start + 8),
                    program.start + header.program_size as usize,
                    Some(base),
                    needed,
                )
            }
            None => (None, program.end, None, 0),
        };
        let needed_len = match kind {
            Kind::Bundled => needed_len.max(program.end),
            Kind::Program => needed_len,
        };
        let mut segments: Vec<Range<usize>> = parsed
            .segments
            .iter()
            .map(|segment| {
                let start = address(segment.data);
                start..start + segment.data.len()
            })
            .collect();
        segments.sort_by_key(|range| (range.start, range.end));
        let mut payloads = Vec::new();
        for segment in &segments {
            if let Some(header) = payload_header(&bytes, segment.clone()) {
                payloads.push(header);
            }
        }
        // Structure: the complement of the segments' data...
        let mut tables = Vec::new();
        let mut cursor = 0;
        for segment in &segments {
            if segment.start > cursor {
                tables.push(cursor..segment.start);
            }
            cursor = cursor.max(segment.end);
        }
        if cursor < bytes.len() {
            tables.push(cursor..bytes.len());
        }
        // ...and the delegate graphs within it.
        tables.extend(
            payloads
                .iter()
                .map(|payload| payload.start..payload.flatbuffer.end),
        );
        let mut xnnpack_delegates = 0;
        let mut vulkan_delegates = 0;
        for delegate in parsed.methods.iter().flat_map(|method| &method.delegates) {
            match delegate.payload {
                DelegatePayload::Xnnpack(_) => xnnpack_delegates += 1,
                DelegatePayload::Vulkan(_) => vulkan_delegates += 1,
                DelegatePayload::Opaque(_) => {}
            }
        }
        drop(file);
        Ok(Base {
            name,
            kind,
            program,
            extended_header,
            program_end,
            segment_base,
            segments,
            payloads,
            tables,
            needed_len,
            xnnpack_delegates,
            vulkan_delegates,
            bytes,
        })
    }

    /// The embedded program of a bundled program, as a file of its own.
    fn embedded_program(&self) -> Option<Result<Base, String>> {
        (self.kind == Kind::Bundled).then(|| {
            Base::new(
                format!("{}#program.pte", self.name),
                self.bytes[self.program.clone()].to_vec(),
            )
        })
    }

    fn has_segment_longer_than_1(&self) -> bool {
        self.segments.iter().any(|segment| segment.len() > 1)
    }
}

/// The `XH00`/`VH00` header of the payload in `segment`, when it has a
/// well-formed one (checked, so that weights that happen to hold the tag are
/// not taken for a header).
fn payload_header(bytes: &[u8], segment: Range<usize>) -> Option<PayloadHeader> {
    let data = bytes.get(segment.clone())?;
    let tag: [u8; 4] = data.get(4..8)?.try_into().ok()?;
    if (tag != *b"XH00" && tag != *b"VH00") || data.get(0..4)? != [0; 4] {
        return None;
    }
    let u32_at = |at: usize| -> Option<usize> {
        Some(u32::from_le_bytes(data.get(at..at + 4)?.try_into().ok()?) as usize)
    };
    let offset = u32_at(10)?;
    let size = u32_at(14)?;
    let graph = data.get(offset..offset.checked_add(size)?)?;
    let identifier = graph.get(4..8)?;
    if !matches!(identifier, b"XN00" | b"XN01" | b"VK00") {
        return None;
    }
    Some(PayloadHeader {
        start: segment.start,
        len: data.len(),
        tag,
        flatbuffer: segment.start + offset..segment.start + offset + size,
    })
}

fn input_dirs() -> (PathBuf, PathBuf) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    (
        root.join("tests").join("fixtures"),
        root.join("..").join("shared").join("corpus"),
    )
}

/// The `.bpte` files to start from: every fixture and the small corpus
/// files, without duplicates. Fails when there are none.
fn input_files() -> Vec<(String, Vec<u8>)> {
    let (fixtures, corpus) = input_dirs();
    let mut files = Vec::new();
    let mut listed = |dir: &Path, label: &str, keep: &dyn Fn(&str) -> bool| {
        let Ok(entries) = fs::read_dir(dir) else {
            let problem = format!("{} is absent; no {label} files", dir.display());
            common::not_run("mutation", &problem);
            return;
        };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| {
                path.extension().is_some_and(|ext| ext == "bpte")
                    && path
                        .file_name()
                        .and_then(|name| name.to_str())
                        .is_some_and(keep)
            })
            .collect();
        paths.sort();
        if paths.is_empty() {
            eprintln!("mutation: no {label} .bpte files in {}", dir.display());
        }
        for path in paths {
            let bytes = fs::read(&path)
                .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
            let name = format!(
                "{label}/{}",
                path.file_name()
                    .and_then(|name| name.to_str())
                    .unwrap_or("?")
            );
            files.push((name, bytes));
        }
    };
    listed(&fixtures, "fixtures", &|_| true);
    listed(&corpus, "corpus", &|name| {
        SMALL_CORPUS_MODELS
            .iter()
            .any(|model| name.split('.').next() == Some(model))
    });
    let mut seen = HashSet::new();
    files.retain(|(_, bytes)| seen.insert(fnv1a(bytes)));
    assert!(
        !files.is_empty(),
        "no input files: neither {} nor {} holds a .bpte file",
        fixtures.display(),
        corpus.display()
    );
    files
}

/// Every input file and the program embedded in it.
fn bases() -> Vec<Base> {
    let mut bases = Vec::new();
    for (name, bytes) in input_files() {
        let base = Base::new(name, bytes)
            .unwrap_or_else(|error| panic!("an unmutated input does not read: {error}"));
        if let Some(program) = base.embedded_program() {
            bases.push(program.unwrap_or_else(|error| {
                panic!("an unmutated embedded program does not read: {error}")
            }));
        }
        bases.push(base);
    }
    bases
}

// ---------------------------------------------------------------------------
// Mutations.

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Family {
    Truncate,
    BitFlip,
    Overwrite,
    Header,
    Integer,
}

impl Family {
    const ALL: [Family; 5] = [
        Family::Truncate,
        Family::BitFlip,
        Family::Overwrite,
        Family::Header,
        Family::Integer,
    ];

    fn name(self) -> &'static str {
        match self {
            Family::Truncate => "truncate",
            Family::BitFlip => "bit-flip",
            Family::Overwrite => "overwrite",
            Family::Header => "header",
            Family::Integer => "integer",
        }
    }
}

#[derive(Clone, Debug)]
enum Edit {
    Truncate(usize),
    Xor { at: usize, mask: u8 },
    Write { at: usize, bytes: Vec<u8> },
}

impl fmt::Display for Edit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Edit::Truncate(len) => write!(f, "truncate to {len} bytes"),
            Edit::Xor { at, mask } => write!(f, "xor byte {at} with {mask:#04x}"),
            Edit::Write { at, bytes } => write!(f, "write {bytes:02x?} at byte {at}"),
        }
    }
}

#[derive(Clone, Debug)]
struct Mutation {
    family: Family,
    /// What the mutation aims at, for messages.
    label: String,
    edits: Vec<Edit>,
    /// The mutant is certainly invalid: the reader must reject it.
    must_reject: bool,
}

impl Mutation {
    fn apply(&self, base: &[u8]) -> Vec<u8> {
        let keep = self
            .edits
            .iter()
            .filter_map(|edit| match edit {
                Edit::Truncate(len) => Some(*len),
                _ => None,
            })
            .min()
            .unwrap_or(base.len())
            .min(base.len());
        let mut bytes = base[..keep].to_vec();
        for edit in &self.edits {
            match edit {
                Edit::Truncate(_) => {}
                Edit::Xor { at, mask } => {
                    if let Some(byte) = bytes.get_mut(*at) {
                        *byte ^= mask;
                    }
                }
                Edit::Write { at, bytes: new } => {
                    let end = (at + new.len()).min(bytes.len());
                    if *at < end {
                        bytes[*at..end].copy_from_slice(&new[..end - at]);
                    }
                }
            }
        }
        bytes
    }
}

impl fmt::Display for Mutation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.family.name(), self.label)?;
        for edit in &self.edits {
            write!(f, "; {edit}")?;
        }
        Ok(())
    }
}

/// Collects the mutations of one file.
struct Mutations {
    list: Vec<Mutation>,
}

impl Mutations {
    fn add(
        &mut self,
        family: Family,
        label: impl Into<String>,
        edits: Vec<Edit>,
        must_reject: bool,
    ) {
        self.list.push(Mutation {
            family,
            label: label.into(),
            edits,
            must_reject,
        });
    }

    /// Overwrites the bytes at `at` with `bytes`.
    fn write(
        &mut self,
        family: Family,
        label: impl Into<String>,
        at: usize,
        bytes: Vec<u8>,
        must_reject: bool,
    ) {
        self.add(family, label, vec![Edit::Write { at, bytes }], must_reject);
    }

    /// Writes `value` as a `width`-byte little-endian integer at `at`.
    fn integer(&mut self, label: &str, at: usize, width: usize, value: u64, must_reject: bool) {
        let bytes = value.to_le_bytes()[..width].to_vec();
        let label = format!("{label} := {value:#x}");
        self.write(Family::Integer, label, at, bytes, must_reject);
    }
}

/// The mutations of `base`, all of them deterministic.
fn mutations(base: &Base) -> Vec<Mutation> {
    let mut rng = Rng::new(SEED ^ fnv1a(base.name.as_bytes()));
    let mut out = Mutations { list: Vec::new() };
    let whole = [Range {
        start: 0,
        end: base.bytes.len(),
    }];
    let tables: &[Range<usize>] = if base.tables.is_empty() {
        &whole
    } else {
        &base.tables
    };
    truncations(base, &mut out);
    bit_flips(base, tables, &mut rng, &mut out);
    overwrites(base, tables, &mut rng, &mut out);
    headers(base, &mut rng, &mut out);
    extended_header_fields(base, &mut rng, &mut out);
    payload_header_fields(base, &mut rng, &mut out);
    table_words(base, tables, &mut rng, &mut out);
    out.list
}

/// Every length up to 256, a spread through the file, and around every
/// landmark: the program's ends, the segment area, segments, payload headers
/// and graphs. A cut that loses data the file needs must be rejected.
fn truncations(base: &Base, out: &mut Mutations) {
    let len = base.bytes.len();
    let mut cuts: Vec<usize> = (0..len.min(256)).collect();
    cuts.extend((0..64).map(|step| len * step / 64));
    let mut landmarks = vec![base.program.start, base.program.end, base.program_end];
    landmarks.extend(base.segment_base);
    landmarks.extend(
        base.segments
            .iter()
            .step_by(base.segments.len().div_ceil(24).max(1))
            .flat_map(|segment| [segment.start, segment.end]),
    );
    landmarks.extend(base.payloads.iter().flat_map(|payload| {
        [
            payload.start + 30,
            payload.flatbuffer.start,
            payload.flatbuffer.end,
        ]
    }));
    for landmark in landmarks {
        cuts.extend([landmark.saturating_sub(1), landmark, landmark + 1]);
    }
    cuts.push(len - 1);
    cuts.sort_unstable();
    cuts.dedup();
    for cut in cuts.into_iter().filter(|&cut| cut < len) {
        let must_reject = cut < base.needed_len || cut < 8;
        out.add(
            Family::Truncate,
            "cut",
            vec![Edit::Truncate(cut)],
            must_reject,
        );
    }
}

/// Single-bit flips (and every tenth a whole-byte inversion), mostly in the
/// tables.
fn bit_flips(base: &Base, tables: &[Range<usize>], rng: &mut Rng, out: &mut Mutations) {
    for index in 0..300 {
        let (label, at) = if index < 230 {
            ("in tables", rng.position_in(tables))
        } else {
            ("anywhere", rng.below(base.bytes.len()))
        };
        let mask = if index % 10 == 9 {
            0xff
        } else {
            1 << rng.below(8)
        };
        out.add(Family::BitFlip, label, vec![Edit::Xor { at, mask }], false);
    }
}

/// Random runs of 1 to 8 bytes, mostly in the tables, and four random bytes
/// scattered over the tables.
fn overwrites(base: &Base, tables: &[Range<usize>], rng: &mut Rng, out: &mut Mutations) {
    for index in 0..200 {
        if index < 170 {
            let (label, at) = if index < 130 {
                ("run in tables", rng.position_in(tables))
            } else {
                ("run anywhere", rng.below(base.bytes.len()))
            };
            let run = 1 + rng.below(8);
            out.write(Family::Overwrite, label, at, rng.bytes(run), false);
        } else {
            let edits = (0..4)
                .map(|_| Edit::Write {
                    at: rng.position_in(tables),
                    bytes: vec![rng.byte()],
                })
                .collect();
            out.add(
                Family::Overwrite,
                "4 scattered bytes in tables",
                edits,
                false,
            );
        }
    }
}

/// Garbage in the first 64 bytes, wrong file identifiers (the file's, the
/// embedded program's, the delegate graphs'), and broken `eh00`, `XH00` and
/// `VH00` tags.
fn headers(base: &Base, rng: &mut Rng, out: &mut Mutations) {
    let head = base.bytes.len().min(64);
    for _ in 0..12 {
        let bytes = rng.bytes(head);
        // Anything but a known identifier at 4..8 is not an ExecuTorch file.
        let known = matches!(bytes.get(4..8), Some(b"ET12" | b"BP08"));
        out.write(Family::Header, "random bytes 0..64", 0, bytes, !known);
    }
    out.write(Family::Header, "zeros 0..64", 0, vec![0; head], true);
    for _ in 0..6 {
        out.write(Family::Header, "random root offset", 0, rng.bytes(4), false);
    }
    let tags: [&[u8; 4]; 8] = [
        b"ET13",
        b"BP09",
        b"et12",
        b"bp08",
        b"\0\0\0\0",
        b"XN01",
        b"VK00",
        b"PK\x03\x04",
    ];
    for tag in tags {
        let label = format!("identifier {}", tag.escape_ascii());
        out.write(Family::Header, label, 4, tag.to_vec(), true);
    }
    let other: &[u8; 4] = match base.kind {
        Kind::Bundled => b"ET12",
        Kind::Program => b"BP08",
    };
    let label = format!("identifier {} (the other format)", other.escape_ascii());
    out.write(Family::Header, label, 4, other.to_vec(), false);
    if base.kind == Kind::Bundled {
        for tag in [b"ET13", b"BP08", b"\0\0\0\0"] {
            let label = format!("embedded program identifier {}", tag.escape_ascii());
            out.write(
                Family::Header,
                label,
                base.program.start + 4,
                tag.to_vec(),
                true,
            );
        }
    }
    if let Some(eh) = base.extended_header {
        // Without its magic the header is not one and the flatbuffer is read
        // from the whole program: usually an error, not always.
        for magic in [b"eh01", b"EH00", b"\0\0\0\0"] {
            let label = format!("eh00 magic {}", magic.escape_ascii());
            out.write(Family::Header, label, eh, magic.to_vec(), false);
        }
        for _ in 0..3 {
            out.write(
                Family::Header,
                "random eh00 fields",
                eh + 4,
                rng.bytes(28),
                false,
            );
        }
    }
    for payload in &base.payloads {
        // Without its tag the payload is read as a bare graph: an error,
        // since it then starts with the header's zeros.
        for tag in [b"XH01", b"VH01"] {
            let label = format!("payload tag {} at {}", tag.escape_ascii(), payload.start);
            out.write(
                Family::Header,
                label,
                payload.start + 4,
                tag.to_vec(),
                false,
            );
        }
        let at = payload.flatbuffer.start + 4;
        let label = format!("graph identifier at {at}");
        out.write(Family::Header, label, at, b"XX99".to_vec(), true);
    }
}

/// Wrong values in the `eh00` header's length (u32 at 12), `program_size`,
/// `segment_base_offset` and `segment_data_size` (u64 at 16, 24, 32).
fn extended_header_fields(base: &Base, rng: &mut Rng, out: &mut Mutations) {
    let Some(eh) = base.extended_header else {
        return;
    };
    let file_len = base.bytes.len() as u64;
    let program_len = base.program.len() as u64;
    // A segment area of 0 or 1 bytes cannot hold the segments.
    let has_data = base.has_segment_longer_than_1();
    for (value, reject) in [
        (0, true),
        (23, true),
        (24, false),
        (u64::from(u32::MAX), true),
        (program_len, true),
        (file_len + 1, true),
        (rng.next_u64() & 0xffff_ffff, false),
    ] {
        out.integer("eh00.length (u32 at 12)", eh + 4, 4, value, reject);
    }
    // Each value puts a region outside the program or cuts segments off,
    // except a random one and where noted.
    for (field, at) in [
        ("eh00.program_size", eh + 8),
        ("eh00.segment_base_offset", eh + 16),
        ("eh00.segment_data_size", eh + 24),
    ] {
        let data_size = field == "eh00.segment_data_size";
        for (value, reject) in [
            (0, !data_size || has_data),
            (1, !data_size || has_data),
            (u64::MAX, true),
            (u64::MAX - 7, true),
            (program_len + 1, true),
            (file_len, has_data || base.kind == Kind::Bundled),
            (file_len + 1, true),
            (1 << 32, true),
            (rng.next_u64(), false),
        ] {
            out.integer(field, at, 8, value, reject);
        }
        // A u32 write into the low or the high word.
        for half in [0, 4] {
            let value = [0, u64::from(u32::MAX), rng.next_u64() & 0xffff_ffff][rng.below(3)];
            out.integer(
                &format!("{field} word at +{half}"),
                at + half,
                4,
                value,
                false,
            );
        }
    }
}

/// Wrong values in the fields of each `XH00`/`VH00` payload header: length
/// (u16 at +8), flatbuffer offset and size (u32 at +10, +14), constant data
/// offset (u32 at +18) and size (u64 at +22).
fn payload_header_fields(base: &Base, rng: &mut Rng, out: &mut Mutations) {
    let file_len = base.bytes.len() as u64;
    for payload in &base.payloads {
        let tag = payload.tag.escape_ascii().to_string();
        let at = payload.start;
        let payload_len = payload.len as u64;
        for (value, reject) in [
            (0, true),
            (29, true),
            (30, false),
            (u64::from(u16::MAX), false),
        ] {
            out.integer(
                &format!("{tag} length (u16 at +8)"),
                at + 8,
                2,
                value,
                reject,
            );
        }
        // A flatbuffer at offset 0 starts with the header, not a graph
        // identifier; one of size 0 has no identifier; the rest point outside
        // the payload.
        let u32_values = |rng: &mut Rng| {
            [
                (0, true),
                (u64::from(u32::MAX), true),
                (u64::from(u32::MAX - 3), true),
                (payload_len, true),
                (payload_len + 1, true),
                (file_len + 1, true),
                (rng.next_u64() & 0xffff_ffff, false),
            ]
        };
        for (value, reject) in u32_values(rng) {
            let label = format!("{tag} flatbuffer offset (u32 at +10)");
            out.integer(&label, at + 10, 4, value, reject);
        }
        for (value, reject) in u32_values(rng) {
            let label = format!("{tag} flatbuffer size (u32 at +14)");
            out.integer(&label, at + 14, 4, value, reject);
        }
        for (value, reject) in u32_values(rng) {
            // With size 0 ("to the end"), offset 0 makes the whole payload
            // the constant region and the payload's length an empty one at
            // its end: both valid.
            let reject = reject && value != 0 && value != payload_len;
            let label = format!("{tag} constants offset (u32 at +18)");
            out.integer(&label, at + 18, 4, value, reject);
        }
        for (value, reject) in [
            (0, false),
            (u64::MAX, true),
            (payload_len + 1, true),
            (file_len + 1, true),
            (u64::from(u32::MAX) + 1, true),
            (rng.next_u64(), false),
        ] {
            let label = format!("{tag} constants size (u64 at +22)");
            out.integer(&label, at + 22, 8, value, reject);
        }
    }
}

/// Special and random values in aligned 4- and 8-byte words of the tables,
/// where offsets, lengths and indices live.
fn table_words(base: &Base, tables: &[Range<usize>], rng: &mut Rng, out: &mut Mutations) {
    let len = base.bytes.len();
    let file_len = len as u64;
    let special = |rng: &mut Rng, max: u64| {
        let choices = [
            0,
            1,
            max,
            max - 1,
            file_len,
            file_len + 1,
            max / 2 + 1,
            rng.next_u64() & max,
        ];
        choices[rng.below(choices.len())]
    };
    for index in 0..105 {
        let (width, max) = if index < 70 {
            (4, u64::from(u32::MAX))
        } else {
            (8, u64::MAX)
        };
        let at = rng.position_in(tables) / width * width;
        if at + width <= len {
            let value = special(rng, max);
            out.integer(&format!("u{} at {at}", width * 8), at, width, value, false);
        }
    }
}

// ---------------------------------------------------------------------------
// Reading a mutant.

/// What a panic left behind, recorded by the hook below.
#[derive(Debug, Clone)]
struct PanicInfo {
    location: String,
    backtrace: Option<String>,
}

thread_local! {
    /// Set on the threads that read mutants: their panics are recorded, not
    /// printed.
    static QUIET_PANICS: Cell<bool> = const { Cell::new(false) };
    static LAST_PANIC: RefCell<Option<PanicInfo>> = const { RefCell::new(None) };
}

/// Backtraces are captured for the first few panics only.
static BACKTRACES_LEFT: AtomicUsize = AtomicUsize::new(3);

fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !QUIET_PANICS.with(Cell::get) {
                previous(info);
                return;
            }
            let backtrace = BACKTRACES_LEFT
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
                    left.checked_sub(1)
                })
                .is_ok()
                .then(|| trim_backtrace(&std::backtrace::Backtrace::force_capture().to_string()));
            let location = info
                .location()
                .map_or_else(|| "<unknown>".to_string(), ToString::to_string);
            LAST_PANIC.with(|last| {
                *last.borrow_mut() = Some(PanicInfo {
                    location,
                    backtrace,
                })
            });
        }));
    });
}

/// A backtrace from the panic on: without the frames of this hook and of
/// the panic machinery.
fn trim_backtrace(backtrace: &str) -> String {
    let lines: Vec<&str> = backtrace.lines().collect();
    let start = lines
        .iter()
        .rposition(|line| line.contains("core::panicking::") || line.contains("rust_begin_unwind"))
        .map_or(0, |index| index + 1);
    // Skip the location line of that frame too.
    let start = lines
        .get(start)
        .filter(|line| line.trim_start().starts_with("at "))
        .map_or(start, |_| start + 1);
    let start = start.min(lines.len());
    lines[start..(start + 60).min(lines.len())].join("\n")
}

#[derive(Debug)]
enum Outcome {
    Ok,
    Err(String),
    Panic {
        message: String,
        info: Option<PanicInfo>,
    },
}

/// Reads `bytes` as ptec does and walks the result; catches any panic.
fn read_mutant(bytes: &[u8]) -> Outcome {
    QUIET_PANICS.with(|quiet| quiet.set(true));
    let result = panic::catch_unwind(AssertUnwindSafe(|| match ExecutorchFile::read(bytes) {
        Ok(file) => {
            std::hint::black_box(walk(&file));
            Outcome::Ok
        }
        Err(error) => {
            let message = error.to_string();
            assert!(!message.is_empty(), "an error with an empty message");
            Outcome::Err(message)
        }
    }));
    QUIET_PANICS.with(|quiet| quiet.set(false));
    result.unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|text| text.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "<non-string panic payload>".to_string());
        Outcome::Panic {
            message,
            info: LAST_PANIC.with(|last| last.borrow_mut().take()),
        }
    })
}

/// Touches everything an accepted file holds, through the accessors that
/// rely on the reader's checks (indices in range, byte counts that do not
/// overflow); a broken guarantee panics here.
fn walk(file: &ExecutorchFile<'_>) -> u64 {
    let program = file.program();
    let mut total = program
        .constant_bytes
        .wrapping_add(program.named_data.total_bytes());
    for segment in &program.segments {
        total = total.wrapping_add(segment.offset ^ segment.data.len() as u64);
    }
    for method in &program.methods {
        total = total.wrapping_add(walk_method(method));
    }
    for suite in file.test_suites() {
        let method = program
            .method(&suite.method)
            .expect("a test suite names a method of the program");
        for case in &suite.cases {
            assert_eq!(case.inputs.len(), method.inputs.len(), "test case inputs");
            assert_eq!(
                case.expected_outputs.len(),
                method.outputs.len(),
                "test case outputs"
            );
            for value in case.inputs.iter().chain(&case.expected_outputs) {
                if let TestValue::Tensor(tensor) = value {
                    total = total.wrapping_add(tensor.data.len() as u64);
                }
            }
        }
    }
    total
}

fn walk_method(method: &Method<'_>) -> u64 {
    let kind = |index: ValueIndex| method.value(index).kind().len() as u64;
    let mut total = 0u64;
    for value in &method.values {
        total = total.wrapping_add(match value {
            Value::Tensor(tensor) => {
                let nbytes = tensor.nbytes();
                if let TensorStorage::Planned {
                    memory_id, offset, ..
                } = &tensor.storage
                {
                    let arena = method.non_const_buffer_sizes[*memory_id as usize];
                    assert!(
                        offset + nbytes <= arena,
                        "a planned tensor outside its arena"
                    );
                }
                nbytes ^ tensor.numel() ^ u64::from(Tensor::is_contiguous_order(&tensor.dim_order))
            }
            Value::IntList(items) | Value::TensorList(items) => {
                items.iter().map(|&item| kind(item)).sum()
            }
            Value::OptionalTensorList(items) => {
                items.iter().flatten().map(|&item| kind(item)).sum()
            }
            _ => value.kind().len() as u64,
        });
    }
    for &index in method.inputs.iter().chain(&method.outputs) {
        total = total.wrapping_add(kind(index));
    }
    for chain in &method.chains {
        for instruction in chain {
            total = total.wrapping_add(match instruction {
                Instruction::Kernel { operator, args } => {
                    method.operator(*operator).key().len() as u64
                        + args.iter().map(|&arg| kind(arg)).sum::<u64>()
                }
                Instruction::Delegate { delegate, args } => {
                    method.delegate(*delegate).id.len() as u64
                        + args.iter().map(|&arg| kind(arg)).sum::<u64>()
                }
                Instruction::Move { from, to } => kind(*from) + kind(*to),
                Instruction::JumpFalse {
                    condition,
                    destination,
                } => {
                    assert!(
                        *destination <= chain.len(),
                        "a jump past the end of its chain"
                    );
                    kind(*condition)
                }
                Instruction::Free { value } => kind(*value),
            });
        }
    }
    for delegate in &method.delegates {
        let payload = &delegate.payload;
        total = total.wrapping_add(
            payload.node_count().unwrap_or(0) as u64
                + payload.constant_bytes()
                + payload.node_histogram().len() as u64,
        );
        // Formatting a decoded graph visits every value it holds; looking up
        // the values its ids name relies on the reader's checks.
        total = total.wrapping_add(match payload {
            DelegatePayload::Xnnpack(graph) => {
                for &id in graph.input_ids.iter().chain(&graph.output_ids) {
                    assert!(
                        graph.value(id).is_some(),
                        "XNNPACK value id {id} is unknown"
                    );
                }
                format!("{graph:?}").len() as u64
            }
            DelegatePayload::Vulkan(graph) => {
                let ids = graph.chain.iter().flat_map(|call| &call.args);
                let kinds: usize = ids.map(|&id| graph.value(id).kind().len()).sum();
                format!("{graph:?}").len() as u64 + kinds as u64
            }
            DelegatePayload::Opaque(data) => data.len() as u64,
        });
    }
    total
}

// ---------------------------------------------------------------------------
// The in-process test.

#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    tried: usize,
    ok: usize,
    err: usize,
}

impl Counts {
    fn add(&mut self, other: Counts) {
        self.tried += other.tried;
        self.ok += other.ok;
        self.err += other.err;
    }
}

/// A broken expectation: a panic, or a certainly invalid mutant accepted.
#[derive(Debug)]
struct Failure {
    file: String,
    index: usize,
    mutation: String,
    problem: String,
    backtrace: Option<String>,
}

#[derive(Debug)]
struct FileReport {
    name: String,
    counts: BTreeMap<Family, Counts>,
    failures: Vec<Failure>,
    /// A few error messages, to show what the reader says.
    samples: Vec<(Family, String)>,
}

/// What a worker is reading now, for the hang watchdog.
#[derive(Debug, Clone)]
struct InFlight {
    file: String,
    index: usize,
    mutation: String,
    since: Instant,
}

fn mutate_file(base: &Base, slot: &Mutex<Option<InFlight>>) -> FileReport {
    let mut report = FileReport {
        name: base.name.clone(),
        counts: BTreeMap::new(),
        failures: Vec::new(),
        samples: Vec::new(),
    };
    for (index, mutation) in mutations(base).iter().enumerate() {
        let bytes = mutation.apply(&base.bytes);
        *slot.lock().expect("watchdog slot") = Some(InFlight {
            file: base.name.clone(),
            index,
            mutation: mutation.to_string(),
            since: Instant::now(),
        });
        let outcome = read_mutant(&bytes);
        *slot.lock().expect("watchdog slot") = None;
        let counts = report.counts.entry(mutation.family).or_default();
        counts.tried += 1;
        let failure = |problem: String, backtrace: Option<String>| Failure {
            file: base.name.clone(),
            index,
            mutation: mutation.to_string(),
            problem,
            backtrace,
        };
        match outcome {
            Outcome::Ok => {
                counts.ok += 1;
                if mutation.must_reject {
                    report.failures.push(failure(
                        "the reader accepted a mutant that is certainly invalid".into(),
                        None,
                    ));
                }
            }
            Outcome::Err(message) => {
                counts.err += 1;
                // One message per family and file, from well into the run
                // (the first errors of each family are the dullest).
                if counts.err == 1 || counts.err == 40 {
                    report
                        .samples
                        .retain(|(family, _)| *family != mutation.family);
                    report.samples.push((mutation.family, message));
                }
            }
            Outcome::Panic { message, info } => {
                let (location, backtrace) = info.map_or(("<unknown>".to_string(), None), |info| {
                    (info.location, info.backtrace)
                });
                report.failures.push(failure(
                    format!("PANIC at {location}: {message}"),
                    backtrace,
                ));
            }
        }
    }
    report
}

#[test]
fn mutated_files_read_to_ok_or_err_without_panics_or_hangs() {
    install_panic_hook();
    let started = Instant::now();
    let bases = Arc::new(bases());
    let (xnnpack, vulkan) = bases.iter().fold((0, 0), |(x, v), base| {
        (x + base.xnnpack_delegates, v + base.vulkan_delegates)
    });
    assert!(xnnpack > 0, "no input file has an XNNPACK delegate");
    assert!(vulkan > 0, "no input file has a Vulkan delegate");
    assert!(
        bases
            .iter()
            .any(|base| base.kind == Kind::Program && !base.payloads.is_empty()),
        "no .pte input has a delegate payload with a header"
    );

    let workers = thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 4);
    let next = Arc::new(AtomicUsize::new(0));
    let slots: Arc<Vec<Mutex<Option<InFlight>>>> =
        Arc::new((0..workers).map(|_| Mutex::new(None)).collect());
    let (sender, receiver) = mpsc::channel::<FileReport>();
    for worker in 0..workers {
        let (bases, next, slots, sender) =
            (bases.clone(), next.clone(), slots.clone(), sender.clone());
        thread::Builder::new()
            .name(format!("mutation-{worker}"))
            .spawn(move || {
                loop {
                    let index = next.fetch_add(1, Ordering::SeqCst);
                    let Some(base) = bases.get(index) else { break };
                    if sender.send(mutate_file(base, &slots[worker])).is_err() {
                        break;
                    }
                }
            })
            .expect("spawn a mutation worker");
    }
    drop(sender);

    let mut reports = Vec::new();
    loop {
        match receiver.recv_timeout(Duration::from_millis(100)) {
            Ok(report) => reports.push(report),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        for slot in slots.iter() {
            let in_flight = slot.lock().map(|slot| slot.clone()).unwrap_or(None);
            if let Some(in_flight) = in_flight
                && in_flight.since.elapsed() > READ_TIME_LIMIT
            {
                panic!(
                    "HANG: reading {} mutation #{} ({}) has taken over {:?}",
                    in_flight.file, in_flight.index, in_flight.mutation, READ_TIME_LIMIT
                );
            }
        }
    }
    assert_eq!(
        reports.len(),
        bases.len(),
        "a worker died without reporting"
    );
    reports.sort_by(|a, b| a.name.cmp(&b.name));

    // Summary.
    let mut by_family: BTreeMap<Family, Counts> = BTreeMap::new();
    let mut total = Counts::default();
    eprintln!(
        "mutation: {} files ({xnnpack} XNNPACK and {vulkan} Vulkan delegates)",
        bases.len()
    );
    for report in &reports {
        let mut file_total = Counts::default();
        for (&family, &counts) in &report.counts {
            by_family.entry(family).or_default().add(counts);
            file_total.add(counts);
        }
        total.add(file_total);
        eprintln!(
            "  {:<44} {:>5} mutations {:>5} ok {:>5} err",
            report.name, file_total.tried, file_total.ok, file_total.err
        );
    }
    eprintln!("mutation: by family");
    for family in Family::ALL {
        let counts = by_family.get(&family).copied().unwrap_or_default();
        eprintln!(
            "  {:<10} {:>6} tried {:>6} ok {:>6} err",
            family.name(),
            counts.tried,
            counts.ok,
            counts.err
        );
    }
    eprintln!(
        "mutation: {} mutations, {} ok, {} err, in {:.1?}",
        total.tried,
        total.ok,
        total.err,
        started.elapsed()
    );
    // A few error messages per family, with different beginnings.
    let mut shown: Vec<(Family, String)> = Vec::new();
    for (family, message) in reports.iter().flat_map(|report| &report.samples) {
        let start = |text: &str| text.chars().take(24).collect::<String>();
        let same_family = shown.iter().filter(|(shown, _)| shown == family);
        if same_family.clone().count() < 3
            && !same_family
                .clone()
                .any(|(_, shown)| start(shown) == start(message))
        {
            shown.push((
                *family,
                message.lines().next().unwrap_or_default().to_string(),
            ));
        }
    }
    shown.sort_by_key(|(family, _)| *family);
    eprintln!("mutation: sample errors");
    for (family, message) in shown {
        eprintln!("  [{}] {message}", family.name());
    }

    let failures: Vec<&Failure> = reports.iter().flat_map(|report| &report.failures).collect();
    if !failures.is_empty() {
        let mut text = format!("{} mutants broke the reader's contract:\n", failures.len());
        for failure in failures.iter().take(40) {
            text += &format!(
                "  {} mutation #{} [{}]: {}\n",
                failure.file, failure.index, failure.mutation, failure.problem
            );
        }
        if let Some(backtrace) = failures
            .iter()
            .find_map(|failure| failure.backtrace.as_ref())
        {
            text += &format!("first backtrace:\n{backtrace}");
        }
        panic!("{text}");
    }
    for family in Family::ALL {
        let counts = by_family.get(&family).copied().unwrap_or_default();
        assert!(
            counts.tried > 0,
            "no {} mutations were tried",
            family.name()
        );
        assert!(
            counts.err > 0,
            "the reader rejected none of the {} {} mutations",
            counts.tried,
            family.name()
        );
    }
}

// ---------------------------------------------------------------------------
// The command line on mutants.

/// A file in the temporary directory, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(tag: &str, extension: &str) -> TempFile {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let unique = COUNTER.fetch_add(1, Ordering::SeqCst);
        TempFile(std::env::temp_dir().join(format!(
            "ptec-mutation-{}-{unique}-{tag}.{extension}",
            std::process::id()
        )))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

struct Run {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

/// Runs `ptec` with `args`, killing it (and failing) after the time limit.
fn run_ptec(args: &[&str]) -> Run {
    let stdout = TempFile::new("stdout", "txt");
    let stderr = TempFile::new("stderr", "txt");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ptec"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(File::create(&stdout.0).expect("create a stdout file"))
        .stderr(File::create(&stderr.0).expect("create a stderr file"))
        .spawn()
        .expect("spawn ptec");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for ptec") {
            break status;
        }
        if started.elapsed() > PROCESS_TIME_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "HANG: ptec {} ran for over {PROCESS_TIME_LIMIT:?}",
                args.join(" ")
            );
        }
        thread::sleep(Duration::from_millis(2));
    };
    let read = |file: &TempFile| {
        String::from_utf8_lossy(&fs::read(&file.0).unwrap_or_default()).into_owned()
    };
    Run {
        status,
        stdout: read(&stdout),
        stderr: read(&stderr),
    }
}

/// A signal that ended a process, if one did.
fn signal(status: &ExitStatus) -> Option<i32> {
    #[cfg(unix)]
    {
        std::os::unix::process::ExitStatusExt::signal(status)
    }
    #[cfg(not(unix))]
    {
        let _ = status;
        None
    }
}

/// Checks one `ptec inspect` run against the contract and against the
/// in-process reader; returns the exit code.
fn check_cli(path: &Path, json: bool, expect_ok: bool, what: &str) -> i32 {
    let path_text = path.to_str().expect("a UTF-8 temporary path");
    let args: &[&str] = if json {
        &["inspect", "--json", path_text]
    } else {
        &["inspect", path_text]
    };
    let run = run_ptec(args);
    let command = format!("ptec {} on {what}", args[..args.len() - 1].join(" "));
    if let Some(signal) = signal(&run.status) {
        panic!(
            "{command} was killed by signal {signal}; stderr:\n{}",
            run.stderr
        );
    }
    let code = run
        .status
        .code()
        .expect("an exit code when there is no signal");
    assert!(
        !run.stderr.contains("panicked"),
        "{command} panicked:\n{}",
        run.stderr
    );
    match code {
        0 => {
            if json {
                serde_json::from_str::<serde_json::Value>(&run.stdout).unwrap_or_else(|error| {
                    panic!(
                        "{command} exited 0 but printed no JSON ({error}):\n{}",
                        run.stdout
                    )
                });
            }
        }
        1 => assert!(
            run.stderr.starts_with("error:"),
            "{command} exited 1 but stderr does not start with `error:`:\n{}",
            run.stderr
        ),
        other => panic!("{command} exited {other}; stderr:\n{}", run.stderr),
    }
    assert_eq!(
        code == 0,
        expect_ok,
        "{command} exited {code} but the reader in process says {}",
        if expect_ok { "Ok" } else { "Err" }
    );
    code
}

#[test]
fn ptec_inspect_exits_0_or_1_on_mutants() {
    install_panic_hook();
    let bases = bases();
    // A few files: some with delegates of each kind, both formats; inspect
    // imports the fp32 XNNPACK graphs, so their mutants reach the importer.
    let wanted = [
        "add.xnnpack",
        "conv_bn.xnnpack",
        "linear_relu.xnnpack",
        "add.vulkan",
        "cond.portable",
        "conv_bn.xnnpack-q8",
        "small_cnn.xnnpack-q8",
        "linear_relu.vulkan",
    ];
    let mut chosen: Vec<&Base> = Vec::new();
    for base in &bases {
        let file_name = base.name.rsplit('/').next().unwrap_or(&base.name);
        let model = file_name
            .trim_end_matches("#program.pte")
            .trim_end_matches(".bpte");
        if wanted.contains(&model)
            && !chosen.iter().any(|other| {
                other.kind == base.kind
                    && other.name.rsplit('/').next() == base.name.rsplit('/').next()
            })
        {
            chosen.push(base);
        }
    }
    if chosen.len() < 4 {
        // Whatever the inputs are, take a few of them.
        chosen = bases.iter().take(6).collect();
    }
    let per_file = 200 / chosen.len().max(1);
    let (mut runs, mut exit_ok, mut exit_err) = (0, 0, 0);
    let mut tally = |code: i32| {
        runs += 1;
        if code == 0 {
            exit_ok += 1;
        } else {
            exit_err += 1;
        }
    };
    let empty = TempFile::new("empty", "pte");
    fs::write(&empty.0, b"").expect("write an empty file");
    tally(check_cli(&empty.0, false, false, "an empty file"));
    let missing = TempFile::new("missing", "pte");
    tally(check_cli(&missing.0, true, false, "a missing file"));
    for base in chosen {
        let extension = match base.kind {
            Kind::Bundled => "bpte",
            Kind::Program => "pte",
        };
        let file = TempFile::new("base", extension);
        fs::write(&file.0, &base.bytes).expect("write a temporary file");
        tally(check_cli(&file.0, true, true, &base.name));
        let all = mutations(base);
        // An even sample through every family.
        let step = (all.len() / per_file).max(1);
        for (index, mutation) in all.iter().enumerate().step_by(step).take(per_file) {
            let bytes = mutation.apply(&base.bytes);
            let expect_ok = match read_mutant(&bytes) {
                Outcome::Ok => true,
                Outcome::Err(_) => false,
                Outcome::Panic { message, .. } => {
                    panic!(
                        "{} mutation #{index} ({mutation}) panics in process: {message}",
                        base.name
                    )
                }
            };
            let file = TempFile::new("mutant", extension);
            fs::write(&file.0, &bytes).expect("write a temporary file");
            let what = format!("{} mutation #{index} ({mutation})", base.name);
            tally(check_cli(&file.0, false, expect_ok, &what));
            tally(check_cli(&file.0, true, expect_ok, &what));
        }
    }
    eprintln!("mutation: ptec inspect ran {runs} times: {exit_ok} exited 0, {exit_err} exited 1");
    assert!(
        exit_ok > 0 && exit_err > 0,
        "the sample has no accepted or no rejected mutant"
    );
}
