//! What ptec does with each operator key it knows: the keys the importers
//! translate (ATen kernel keys of programs, XNNPACK node types, Vulkan
//! operator names), and for each back end whether it runs the ops a key
//! becomes, or why not. Generated from the importers' tables and the code
//! generators' own answers ([`ptec_codegen::support`]), never written by
//! hand.

use std::collections::BTreeMap;

pub use ptec_import::OperatorSource;

use crate::load::Backend;

/// One operator key and what each back end makes of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperatorSupport {
    /// `aten::add.out`, `XNNAdd`, `aten.add.Tensor`.
    pub key: String,
    pub source: OperatorSource,
    /// The back ends that run it.
    pub supported: Vec<Backend>,
    /// The others, each with the reason.
    pub refused: BTreeMap<Backend, String>,
}

/// Every operator key ptec knows, by source then key.
pub fn operators() -> Vec<OperatorSupport> {
    ptec_import::operators()
        .into_iter()
        .map(|operator| {
            let mut supported = Vec::new();
            let mut refused = BTreeMap::new();
            for backend in Backend::ALL {
                let verdict = match &operator.emits {
                    Err(why) => Err(why.clone()),
                    Ok(kinds) => kinds
                        .iter()
                        .find_map(|&kind| {
                            ptec_codegen::support(backend.code_generator(), kind)
                                .err()
                                .map(|why| format!("{} ops: {why}", kind.name()))
                        })
                        .map_or(Ok(()), Err),
                };
                match verdict {
                    Ok(()) => supported.push(backend),
                    Err(why) => {
                        refused.insert(backend, why);
                    }
                }
            }
            OperatorSupport {
                key: operator.key,
                source: operator.source,
                supported,
                refused,
            }
        })
        .collect()
}
