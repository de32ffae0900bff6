//! The operator table: how each ATen out-variant kernel call (and the
//! `dim_order_ops` ones ExecuTorch adds) becomes IR ops, one module per
//! family of operators. Each entry holds the operator's schema as PyTorch
//! prints it: the call's arguments are checked against it before the
//! entry's rule runs, and the rule reads them by name. Each entry also
//! names the kinds of op it emits, which is how `ptec operators` tells, per
//! back end, what a key needs.
//!
//! Unary elementwise functions are not listed: every [`UnaryOp`] whose ATen
//! name is its own is imported as `aten::NAME.out(Tensor self, *,
//! Tensor(a!) out)`. Operators ptec knows but cannot compile yet are listed
//! with the reason (`REFUSED`), which a program calling them is told.

mod creation;
mod distance;
mod elementwise;
mod index;
mod layout;
mod llm;
mod nn;
mod nonzero;
mod quantize;
mod random;
mod reduce;
mod sample;
mod symbolic;

use std::collections::HashMap;
use std::sync::OnceLock;

use ptec_ir::OpKind;
use ptec_ir::ops::elementwise::{Elementwise, UnaryOp};

use crate::call::Call;
use crate::error::ImportError;
use crate::schema::Schema;

type Rule = fn(&mut Call<'_, '_, '_>) -> Result<(), ImportError>;

/// An operator with a rule of its own: its schema, its rule, and the kinds
/// of op it emits.
type Operator = (&'static str, Rule, &'static [OpKind]);

/// An operator ptec refuses: its schema, and why.
type Refused = (&'static str, &'static str);

/// Every family's operators.
const FAMILIES: [&[Operator]; 13] = [
    elementwise::OPERATORS,
    layout::OPERATORS,
    index::OPERATORS,
    nonzero::OPERATORS,
    reduce::OPERATORS,
    nn::OPERATORS,
    creation::OPERATORS,
    symbolic::OPERATORS,
    sample::OPERATORS,
    distance::OPERATORS,
    random::OPERATORS,
    llm::OPERATORS,
    quantize::OPERATORS,
];

/// Every family's refused operators.
const REFUSED: [&[Refused]; 1] = [layout::REFUSED];

const ELEMENTWISE: &[OpKind] = &[OpKind::Elementwise];
const NOTHING: &[OpKind] = &[];

/// How one operator is imported.
#[derive(Clone, Copy)]
enum Import {
    /// By a rule of its own.
    Rule(Rule),
    /// As a unary elementwise function.
    Unary(UnaryOp),
    /// Not at all, for this reason.
    Refused(&'static str),
}

/// An operator the table imports: its schema, how it is imported and the
/// kinds of op it emits.
pub(crate) struct Entry {
    pub(crate) schema: Schema,
    import: Import,
    emits: &'static [OpKind],
}

/// The table by key, the unary functions' entries included.
fn table() -> &'static HashMap<&'static str, Entry> {
    static TABLE: OnceLock<HashMap<&'static str, Entry>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let unary = UnaryOp::ALL.into_iter().filter_map(|op| {
            let name = op.aten_name()?;
            let text = format!("aten::{name}.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
            Some((
                String::leak(text) as &'static str,
                Import::Unary(op),
                ELEMENTWISE,
            ))
        });
        let own = FAMILIES
            .into_iter()
            .flatten()
            .map(|&(text, rule, emits)| (text, Import::Rule(rule), emits));
        let refused = REFUSED
            .into_iter()
            .flatten()
            .map(|&(text, why)| (text, Import::Refused(why), NOTHING));
        unary
            .chain(own)
            .chain(refused)
            .map(|(text, import, emits)| {
                // The schemas are the table's own text; a test parses each.
                let schema = Schema::parse(text).unwrap_or_else(|error| panic!("{error}"));
                let entry = Entry {
                    schema,
                    import,
                    emits,
                };
                (entry.schema.key, entry)
            })
            .collect()
    })
}

/// The table's entry for `key`.
pub(crate) fn entry(key: &str) -> Option<&'static Entry> {
    table().get(key)
}

impl Entry {
    /// Why ptec refuses the operator, when it does.
    pub(crate) fn refusal(&self) -> Option<&'static str> {
        match self.import {
            Import::Refused(why) => Some(why),
            Import::Rule(_) | Import::Unary(_) => None,
        }
    }
}

/// The table's key of the unary function whose ATen name is `name`.
pub(crate) fn unary_key(name: &str) -> Option<&'static str> {
    entry(&format!("aten::{name}.out")).map(|entry| entry.schema.key)
}

/// The kinds of op the entry `key` emits (none for a refused one).
pub(crate) fn emits(key: &str) -> Option<&'static [OpKind]> {
    entry(key).map(|entry| entry.emits)
}

/// Runs `entry`'s rule over a call whose arguments match its schema.
pub(crate) fn import_call(entry: &Entry, call: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    match entry.import {
        Import::Rule(rule) => rule(call),
        Import::Unary(op) => {
            let x = call.tensor("self")?;
            call.emit(Elementwise::unary(op, x), &["out"])
        }
        Import::Refused(why) => {
            Err(call.invalid(format!("{} is not supported: {why}", entry.schema.key)))
        }
    }
}

/// Every operator key the table knows, sorted, with the kinds of op it
/// emits or why ptec refuses it.
pub fn operators() -> Vec<(String, Result<&'static [OpKind], &'static str>)> {
    let mut operators: Vec<_> = table()
        .iter()
        .map(|(key, entry)| {
            let emits = match entry.refusal() {
                Some(why) => Err(why),
                None => Ok(entry.emits),
            };
            (key.to_string(), emits)
        })
        .collect();
    operators.sort();
    operators
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schema_parses_and_keys_are_unique() {
        let own: usize = FAMILIES.iter().map(|family| family.len()).sum();
        let refused: usize = REFUSED.iter().map(|family| family.len()).sum();
        let unary = UnaryOp::ALL
            .into_iter()
            .filter(|op| op.aten_name().is_some())
            .count();
        assert_eq!(
            table().len(),
            own + refused + unary,
            "a key is listed twice"
        );
    }

    /// PyTorch's schemas, from `scripts/gen_schemas.py`.
    const TORCH: &str = include_str!("schemas.txt");

    fn torch_schemas() -> HashMap<&'static str, &'static str> {
        TORCH
            .lines()
            .filter_map(|line| line.split_once('\t'))
            .collect()
    }

    #[test]
    fn every_schema_is_pytorchs() {
        let torch = torch_schemas();
        let mut wrong = Vec::new();
        for (&key, entry) in table() {
            let own = match entry.import {
                Import::Rule(_) => FAMILIES
                    .into_iter()
                    .flatten()
                    .find(|(text, _, _)| text.starts_with(&format!("{key}(")))
                    .map(|(text, _, _)| text.to_string()),
                Import::Unary(op) => op.aten_name().map(|name| {
                    format!("aten::{name}.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)")
                }),
                Import::Refused(_) => REFUSED
                    .into_iter()
                    .flatten()
                    .find(|(text, _)| text.starts_with(&format!("{key}(")))
                    .map(|(text, _)| text.to_string()),
            };
            if own.as_deref() != torch.get(key).copied() {
                wrong.push(format!(
                    "{key}: ours {own:?}, PyTorch's {:?}",
                    torch.get(key)
                ));
            }
        }
        wrong.sort();
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn every_pytorch_schema_parses() {
        let failures: Vec<String> = torch_schemas()
            .values()
            .filter_map(|text| Schema::parse(text).err().map(|error| error.to_string()))
            .collect();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}
