//! Memory planning: gives every non-constant value an offset in one arena,
//! from liveness over the final schedule.
//!
//! A value lives from its first write to its last read (inputs from the
//! start; outputs and state to the end, state across calls). A view
//! (reshape between contiguous tensors of one type) shares its input's
//! memory, and the two live as one. Values are placed greedily in several
//! orders (largest first, longest-lived first, most conflicts first), each at
//! the lowest offset that no value alive at the same time occupies, aligned
//! to 64 bytes (16 for values smaller than that; sizes round to 16), and the
//! smallest arena wins.
//!
//! A schedule with a backward jump (a loop) has no such liveness: there,
//! and wherever the pipeline does not run this pass, every value gets
//! memory of its own ([`place_separately`]).

use std::collections::{HashMap, HashSet};

use ptec_ir::ops::layout::Reshape;
use ptec_ir::{Graph, NodeId, Op, ValueId, ValueKind};

/// Alignment of values of at least this many bytes; smaller ones get
/// `SMALL_ALIGNMENT`.
const ALIGNMENT: u64 = 64;
const SMALL_ALIGNMENT: u64 = 16;

fn alignment(bytes: u64) -> u64 {
    if bytes >= ALIGNMENT {
        ALIGNMENT
    } else {
        SMALL_ALIGNMENT
    }
}

#[derive(Debug, Clone, Copy)]
struct Interval {
    first: usize,
    last: usize,
    bytes: u64,
}

pub(crate) fn run(graph: &mut Graph<'_>) -> bool {
    if has_backward_jump(graph) {
        place_separately(graph);
        return true;
    }
    let (root, intervals) = lifetimes(graph);
    let (offsets, size) = place(&intervals);
    let ids: Vec<ValueId> = graph.values().map(|(id, _)| id).collect();
    for id in ids {
        if let ValueKind::Constant(_) = graph.value(id).kind {
            continue;
        }
        let key = *root.get(&id).unwrap_or(&id);
        graph.value_mut(id).offset = offsets.get(&key).copied();
    }
    graph.set_arena_size(size);
    true
}

/// Places every non-constant value that the graph refers to in memory of
/// its own, one after another in the order of their ids, each 64-byte
/// aligned: always correct, as nothing shares memory, and what a graph gets
/// when memory is not planned.
pub(crate) fn place_separately(graph: &mut Graph<'_>) {
    let referenced = graph.referenced_values();
    let mut arena = 0;
    for index in 0..graph.value_count() {
        let Some(id) = graph.value_id(index) else {
            continue;
        };
        let value = graph.value(id);
        let placed = referenced.contains(&id) && !matches!(value.kind, ValueKind::Constant(_));
        let bytes = value.ty.max_bytes(|symbol| graph.bound(symbol));
        let offset = placed.then_some(arena);
        if placed {
            arena += bytes.next_multiple_of(ALIGNMENT);
        }
        graph.value_mut(id).offset = offset;
    }
    graph.set_arena_size(arena);
}

/// The most bytes alive at once: no plan of this schedule can use less.
pub fn live_peak(graph: &Graph<'_>) -> u64 {
    let (_, intervals) = lifetimes(graph);
    let end = intervals
        .values()
        .map(|interval| interval.last)
        .max()
        .unwrap_or(0);
    (0..=end)
        .map(|position| {
            intervals
                .values()
                .filter(|interval| interval.first <= position && position <= interval.last)
                .map(|interval| interval.bytes)
                .sum::<u64>()
        })
        .max()
        .unwrap_or(0)
}

/// Each value's lifetime, with views merged into their base (`root` maps a
/// view to the value whose memory it shares).
fn lifetimes(graph: &Graph<'_>) -> (HashMap<ValueId, ValueId>, HashMap<ValueId, Interval>) {
    let end = graph.schedule().len() + 1;
    let mut root: HashMap<ValueId, ValueId> = HashMap::new();
    let mut intervals: HashMap<ValueId, Interval> = HashMap::new();
    let bytes = |graph: &Graph<'_>, value: ValueId| {
        // Sizes round to the small alignment so that values pack tightly;
        // offsets of large values still start 64-byte aligned.
        graph
            .value(value)
            .ty
            .max_bytes(|symbol| graph.bound(symbol))
            .max(1)
            .next_multiple_of(SMALL_ALIGNMENT)
    };
    // Positions: 0 is "before the first node", node k is k + 1, `end` is
    // "after the last".
    let mut touch =
        |graph: &Graph<'_>, root: &HashMap<ValueId, ValueId>, value: ValueId, position: usize| {
            if let ValueKind::Constant(_) = graph.value(value).kind {
                return;
            }
            let key = *root.get(&value).unwrap_or(&value);
            let size = bytes(graph, value);
            let entry = intervals.entry(key).or_insert(Interval {
                first: position,
                last: position,
                bytes: size,
            });
            entry.first = entry.first.min(position);
            entry.last = entry.last.max(position);
            entry.bytes = entry.bytes.max(size);
        };
    let loops = has_backward_jump(graph);
    for (position, &id) in graph.schedule().iter().enumerate() {
        let node = graph.node(id);
        if let Some((input, alias)) = view_alias(graph, id) {
            let base = *root.get(&input).unwrap_or(&input);
            root.insert(alias, base);
        } else if let Some((output, base)) = (!loops)
            .then(|| in_place(graph, &root, id, position))
            .flatten()
        {
            root.insert(output, base);
        }
        for &value in node.inputs().iter().chain(node.outputs()) {
            touch(graph, &root, value, position + 1);
        }
    }
    for (id, value) in graph.values() {
        match value.kind {
            ValueKind::Input(_) => touch(graph, &root, id, 0),
            ValueKind::State { .. } => {
                touch(graph, &root, id, 0);
                touch(graph, &root, id, end);
            }
            _ => {}
        }
    }
    for &output in graph.outputs() {
        touch(graph, &root, output, end);
    }
    (root, intervals)
}

/// An elementwise node whose result can take the memory of an input of the
/// same type that nothing reads afterwards (each element is read before it
/// is written, at the same position): the result and that input's root.
/// `here` is the node's position in the schedule.
fn in_place(
    graph: &Graph<'_>,
    root: &HashMap<ValueId, ValueId>,
    id: NodeId,
    here: usize,
) -> Option<(ValueId, ValueId)> {
    let node = graph.node(id);
    let &[output] = node.outputs() else {
        return None;
    };
    let fresh = matches!(graph.value(output).kind, ValueKind::Computed)
        && graph.writers(output) == [id]
        && !graph.is_live_out(output);
    if !node.op().is_fusable_elementwise() || !fresh {
        return None;
    }
    // Readers come in schedule order, so the last is the last read.
    let last_read = |value: ValueId| {
        graph
            .readers(value)
            .last()
            .map(|&reader| graph.position(reader))
    };
    node.inputs().into_iter().find_map(|input| {
        let base = *root.get(&input).unwrap_or(&input);
        let same_type = graph.value(input).ty == graph.value(output).ty;
        // Every value sharing the base's memory is computed, stays inside
        // the method and is last read here.
        let group: Vec<ValueId> = std::iter::once(base)
            .chain(root.iter().filter(|(_, r)| **r == base).map(|(v, _)| *v))
            .collect();
        let dead_after = group.iter().all(|&value| {
            matches!(graph.value(value).kind, ValueKind::Computed)
                && !graph.is_live_out(value)
                && last_read(value).is_none_or(|last| last <= here)
        });
        (same_type && dead_after).then_some((output, base))
    })
}

/// The input and output of a reshape whose output can share its input's
/// memory: both contiguous, of one element type, each written by one node
/// only.
fn view_alias(graph: &Graph<'_>, id: NodeId) -> Option<(ValueId, ValueId)> {
    let node = graph.node(id);
    let Op::Reshape(Reshape { input }) = *node.op() else {
        return None;
    };
    let output = *node.outputs().first()?;
    let (from, to) = (graph.value(input), graph.value(output));
    let shareable_input = match from.kind {
        ValueKind::Input(_) => true,
        ValueKind::Computed => graph.writers(input).len() == 1,
        _ => false,
    };
    let same_layout =
        from.ty.dtype == to.ty.dtype && from.ty.is_contiguous() && to.ty.is_contiguous();
    (shareable_input
        && same_layout
        && graph.writers(output).len() == 1
        && !graph.is_live_out(output))
    .then_some((input, output))
}

fn has_backward_jump(graph: &Graph<'_>) -> bool {
    let mut seen_labels = HashSet::new();
    graph.schedule().iter().any(|&id| match graph.op(id) {
        Op::Label(label) => {
            seen_labels.insert(label.label);
            false
        }
        op => op.label().is_some_and(|label| seen_labels.contains(&label)),
    })
}

/// What placement puts first; the smallest arena wins.
#[derive(Clone, Copy, Debug)]
enum First {
    Largest,
    LongestLived,
    MostConflicts,
    Earliest,
}

fn place(intervals: &HashMap<ValueId, Interval>) -> (HashMap<ValueId, u64>, u64) {
    [
        First::Largest,
        First::LongestLived,
        First::MostConflicts,
        First::Earliest,
    ]
    .into_iter()
    .map(|order| place_in_order(intervals, order))
    .min_by_key(|(_, size)| *size)
    .expect("at least one order")
}

/// Greedy placement in `order`: each interval takes the lowest aligned
/// offset that fits between the intervals already placed that overlap it in
/// time.
fn place_in_order(
    intervals: &HashMap<ValueId, Interval>,
    order: First,
) -> (HashMap<ValueId, u64>, u64) {
    let overlaps = |a: &Interval, b: &Interval| a.first <= b.last && b.first <= a.last;
    let mut sorted: Vec<(&ValueId, &Interval, u64)> = intervals
        .iter()
        .map(|(id, interval)| {
            let key = match order {
                First::Largest => interval.bytes,
                First::LongestLived => (interval.last - interval.first) as u64,
                First::Earliest => u64::MAX - interval.first as u64,
                First::MostConflicts => intervals
                    .values()
                    .filter(|other| overlaps(interval, other))
                    .map(|other| other.bytes)
                    .sum(),
            };
            (id, interval, key)
        })
        .collect();
    sorted.sort_by(|a, b| {
        b.2.cmp(&a.2)
            .then(b.1.bytes.cmp(&a.1.bytes))
            .then(a.1.first.cmp(&b.1.first))
            .then(a.0.cmp(b.0))
    });
    let mut placed: Vec<(Interval, u64)> = Vec::with_capacity(sorted.len());
    let mut offsets = HashMap::with_capacity(sorted.len());
    let mut arena = 0;
    for (&id, &interval, _) in sorted {
        let mut busy: Vec<(u64, u64)> = placed
            .iter()
            .filter(|(other, _)| overlaps(other, &interval))
            .map(|(other, offset)| (*offset, offset + other.bytes))
            .collect();
        busy.sort_unstable();
        let align = alignment(interval.bytes);
        let mut offset = 0;
        for (start, end) in busy {
            if offset + interval.bytes <= start {
                break;
            }
            offset = offset.max(end.next_multiple_of(align));
        }
        arena = arena.max(offset + interval.bytes);
        offsets.insert(id, offset);
        placed.push((interval, offset));
    }
    (offsets, arena)
}
