//! Operator schemas, written as PyTorch prints them
//! (`aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)`).
//! Each entry of the operator table carries its schema: the importer checks
//! a call's arguments against it before the entry's rule runs, and the rule
//! reads arguments by their names in it, so an error names the argument as
//! the user's PyTorch code does.

use std::fmt;

use crate::call::Argument;
use ptec_ir::symbolic::ScalarKind;

/// An operator's schema: its key, its parameters in order, and how many
/// values it returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Schema {
    /// `namespace::name.overload` (`.overload` absent for `default`).
    pub(crate) key: &'static str,
    pub(crate) params: Vec<Param>,
    pub(crate) returns: Vec<Type>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Param {
    pub(crate) name: &'static str,
    pub(crate) ty: Type,
}

/// A parameter's or a result's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Type {
    pub(crate) base: Base,
    /// A list (`int[]`, `int[2]`, `Tensor[]`).
    pub(crate) list: bool,
    /// The list's items may be None (`Tensor?[]`).
    pub(crate) optional_items: bool,
    /// The value may be None (`int?`, `int[]?`).
    pub(crate) optional: bool,
    /// The operator writes it (`Tensor(a!)`).
    pub(crate) written: bool,
    /// Its alias set's letter (`a` in `Tensor(a!)`): a result with the
    /// letter of a parameter is that parameter's tensor.
    pub(crate) alias: Option<char>,
}

/// The element types schemas use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Base {
    Tensor,
    Int,
    /// An integer that may be computed at run time.
    SymInt,
    Float,
    Bool,
    Str,
    /// An Int, a Float or a Bool.
    Scalar,
    ScalarType,
    Layout,
    Device,
    MemoryFormat,
    Generator,
}

impl Base {
    fn parse(name: &str) -> Option<Base> {
        Some(match name {
            "Tensor" => Base::Tensor,
            "int" => Base::Int,
            "SymInt" => Base::SymInt,
            "float" => Base::Float,
            "bool" => Base::Bool,
            "str" => Base::Str,
            "Scalar" => Base::Scalar,
            "ScalarType" => Base::ScalarType,
            "Layout" => Base::Layout,
            "Device" => Base::Device,
            "MemoryFormat" => Base::MemoryFormat,
            "Generator" => Base::Generator,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Base::Tensor => "Tensor",
            Base::Int => "int",
            Base::SymInt => "SymInt",
            Base::Float => "float",
            Base::Bool => "bool",
            Base::Str => "str",
            Base::Scalar => "Scalar",
            Base::ScalarType => "ScalarType",
            Base::Layout => "Layout",
            Base::Device => "Device",
            Base::MemoryFormat => "MemoryFormat",
            Base::Generator => "Generator",
        }
    }

    /// Whether one value of the program's kind `found` is of this type.
    fn accepts(self, found: &Argument) -> bool {
        match (self, found) {
            (Base::Tensor, Argument::Tensor(_)) => true,
            (Base::Int | Base::SymInt, Argument::Int(_)) => true,
            (Base::Int | Base::SymInt, Argument::Sym(_, ScalarKind::Int)) => true,
            // The exporter writes a float argument with an integral value
            // as an Int.
            (Base::Float, Argument::Double(_) | Argument::Int(_)) => true,
            (Base::Float, Argument::Sym(_, ScalarKind::Float | ScalarKind::Int)) => true,
            (Base::Bool, Argument::Bool(_) | Argument::Sym(_, ScalarKind::Bool)) => true,
            (Base::Str, Argument::String(_)) => true,
            (
                Base::Scalar,
                Argument::Int(_) | Argument::Double(_) | Argument::Bool(_) | Argument::Sym(..),
            ) => true,
            // Enumerations travel as their numbers.
            (
                Base::ScalarType | Base::Layout | Base::MemoryFormat | Base::Device,
                Argument::Int(_),
            ) => true,
            _ => false,
        }
    }
}

impl Type {
    /// Whether the program's argument is of this type.
    pub(crate) fn accepts(&self, found: &Argument) -> bool {
        if self.optional && *found == Argument::Null {
            return true;
        }
        if !self.list {
            return self.base.accepts(found);
        }
        match (self.base, found) {
            (Base::Tensor, Argument::TensorList(_)) => true,
            (Base::Tensor, Argument::OptionalTensorList(_)) => self.optional_items,
            (Base::Int | Base::SymInt, Argument::IntList(_)) => true,
            (Base::Float, Argument::DoubleList(_)) => true,
            (Base::Bool, Argument::BoolList(_)) => true,
            _ => false,
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.base.name())?;
        if self.written {
            f.write_str("(a!)")?;
        }
        if self.list {
            f.write_str(if self.optional_items { "?[]" } else { "[]" })?;
        }
        if self.optional {
            f.write_str("?")?;
        }
        Ok(())
    }
}

/// Why a schema's text does not parse: a mistake in the operator table,
/// which its tests find.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("schema {text:?}: {why}")]
pub(crate) struct SchemaError {
    text: &'static str,
    why: String,
}

impl Schema {
    /// Parses `key(params) -> returns`.
    pub(crate) fn parse(text: &'static str) -> Result<Schema, SchemaError> {
        let error = |why: String| SchemaError { text, why };
        let open = text
            .find('(')
            .ok_or_else(|| error("no parameter list".into()))?;
        let (key, rest) = text.split_at(open);
        let close = matching_paren(rest).ok_or_else(|| error("unbalanced parentheses".into()))?;
        let params = split_top_level(&rest[1..close])
            .into_iter()
            .filter(|param| *param != "*")
            .map(|param| parse_param(param).map_err(&error))
            .collect::<Result<Vec<_>, _>>()?;
        let returns = rest[close + 1..]
            .trim()
            .strip_prefix("->")
            .ok_or_else(|| error("no `->` before the results".into()))?
            .trim();
        let returns = match returns.strip_prefix('(') {
            Some(tuple) => tuple
                .strip_suffix(')')
                .ok_or_else(|| error("unbalanced result tuple".into()))?,
            None => returns,
        };
        let returns = split_top_level(returns)
            .into_iter()
            .map(|item| {
                let ty = item.split_whitespace().next().unwrap_or(item);
                parse_type(ty).map_err(&error)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Schema {
            key: key.trim(),
            params,
            returns,
        })
    }

    /// The position of the parameter `name`.
    pub(crate) fn position(&self, name: &str) -> Option<usize> {
        self.params.iter().position(|param| param.name == name)
    }

    /// The first parameter whose argument is not of its type, with the
    /// argument.
    pub(crate) fn mismatch<'x>(
        &self,
        args: &'x [Argument],
    ) -> Option<(usize, &Param, &'x Argument)> {
        self.params
            .iter()
            .zip(args)
            .enumerate()
            .find(|(_, (param, arg))| !param.ty.accepts(arg))
            .map(|(position, (param, arg))| (position, param, arg))
    }
}

/// The index of the `)` that closes the `(` `text` starts with.
fn matching_paren(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (index, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(index);
                }
            }
            _ => {}
        }
    }
    None
}

/// `text` split at the commas outside brackets, parentheses and quotes,
/// each piece trimmed; nothing for an empty text.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let (mut depth, mut quoted, mut start) = (0i32, false, 0);
    for (index, c) in text.char_indices() {
        match c {
            '"' | '\'' => quoted = !quoted,
            '(' | '[' if !quoted => depth += 1,
            ')' | ']' if !quoted => depth -= 1,
            ',' if !quoted && depth == 0 => {
                pieces.push(text[start..index].trim());
                start = index + 1;
            }
            _ => {}
        }
    }
    let last = text[start..].trim();
    if !last.is_empty() || !pieces.is_empty() {
        pieces.push(last);
    }
    pieces
}

/// `Type name[=default]`.
fn parse_param(text: &'static str) -> Result<Param, String> {
    let declaration = text.split('=').next().unwrap_or(text).trim();
    let (ty, name) = declaration
        .rsplit_once(char::is_whitespace)
        .ok_or_else(|| format!("parameter {text:?} has no name"))?;
    Ok(Param {
        name: name.trim(),
        ty: parse_type(ty.trim())?,
    })
}

/// `Base[(alias)][[N]][?]`, with `?` before `[]` for optional items.
fn parse_type(text: &str) -> Result<Type, String> {
    let end = text
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(text.len());
    let base = Base::parse(&text[..end]).ok_or_else(|| format!("unknown type {text:?}"))?;
    let mut ty = Type {
        base,
        list: false,
        optional_items: false,
        optional: false,
        written: false,
        alias: None,
    };
    let mut rest = &text[end..];
    if let Some(alias) = rest.strip_prefix('(') {
        let close = alias
            .find(')')
            .ok_or_else(|| format!("unclosed alias in {text:?}"))?;
        ty.written = alias[..close].ends_with('!');
        ty.alias = alias.chars().next().filter(char::is_ascii_lowercase);
        rest = &alias[close + 1..];
    }
    if let Some(items) = rest.strip_prefix("?[") {
        ty.optional_items = true;
        rest = items;
        ty.list = true;
    } else if let Some(items) = rest.strip_prefix('[') {
        rest = items;
        ty.list = true;
    }
    if ty.list {
        let close = rest
            .find(']')
            .ok_or_else(|| format!("unclosed list in {text:?}"))?;
        if !rest[..close].chars().all(|c| c.is_ascii_digit()) {
            return Err(format!("bad list length in {text:?}"));
        }
        rest = &rest[close + 1..];
    }
    match rest {
        "" => {}
        "?" => ty.optional = true,
        _ => return Err(format!("unexpected {rest:?} in type {text:?}")),
    }
    Ok(ty)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &'static str) -> Schema {
        Schema::parse(text).unwrap_or_else(|error| panic!("{error}"))
    }

    #[test]
    fn parses_parameters_results_and_types() {
        let schema = parse(
            "aten::max_pool2d_with_indices.out(Tensor self, int[2] kernel_size, int[2] stride=[], \
             int[2] padding=0, int[2] dilation=1, bool ceil_mode=False, *, Tensor(a!) out, \
             Tensor(b!) indices) -> (Tensor(a!), Tensor(b!))",
        );
        assert_eq!(schema.key, "aten::max_pool2d_with_indices.out");
        let names: Vec<&str> = schema.params.iter().map(|p| p.name).collect();
        assert_eq!(
            names,
            [
                "self",
                "kernel_size",
                "stride",
                "padding",
                "dilation",
                "ceil_mode",
                "out",
                "indices"
            ]
        );
        assert_eq!(schema.returns.len(), 2);
        assert!(schema.params[6].ty.written && !schema.params[0].ty.written);
        assert!(schema.params[1].ty.list);
        assert_eq!(schema.params[2].ty.to_string(), "int[]");

        let schema = parse(
            "aten::index.Tensor_out(Tensor self, Tensor?[] indices, *, Tensor(a!) out) -> Tensor(a!)",
        );
        let indices = schema.params[1].ty;
        assert!(indices.list && indices.optional_items && !indices.optional);
        assert_eq!(indices.to_string(), "Tensor?[]");

        let schema = parse(
            "aten::div.out_mode(Tensor self, Tensor other, *, str? rounding_mode, Tensor(a!) out) -> Tensor(a!)",
        );
        assert!(schema.params[2].ty.optional);
        assert_eq!(schema.position("rounding_mode"), Some(2));

        let schema = parse(
            "aten::split_copy.Tensor_out(Tensor self, SymInt split_size, int dim=0, *, Tensor(a!)[] out) -> ()",
        );
        assert!(schema.returns.is_empty());
        assert!(schema.params[3].ty.written && schema.params[3].ty.list);

        // A cache written in place is not the result, which names `out`'s
        // alias set.
        let schema = parse(
            "llama::update_cache.out(Tensor value, Tensor(a!) cache, SymInt start_pos, *, Tensor(b!) out) -> Tensor(b!)",
        );
        assert!(schema.params[1].ty.written && schema.params[3].ty.written);
        assert_eq!(schema.params[1].ty.alias, Some('a'));
        assert_eq!(schema.returns[0].alias, schema.params[3].ty.alias);

        let schema = parse("aten::sym_size.int(Tensor self, int dim) -> SymInt");
        assert_eq!(schema.returns[0].base, Base::SymInt);
    }

    #[test]
    fn defaults_with_commas_and_quotes_do_not_split_parameters() {
        let schema = parse(
            "aten::gelu.out(Tensor self, *, str approximate='none', Tensor(a!) out) -> Tensor(a!)",
        );
        assert_eq!(schema.params.len(), 3);
        let schema = parse("x::f(int[2] a=[1, 1], str b=\"a,b\", float c=1e-05) -> ()");
        let names: Vec<&str> = schema.params.iter().map(|p| p.name).collect();
        assert_eq!(names, ["a", "b", "c"]);
    }

    #[test]
    fn malformed_schemas_are_refused() {
        for text in [
            "aten::f",
            "aten::f(Tensor self",
            "aten::f(Tensor self)",
            "aten::f(Tensr self) -> ()",
            "aten::f(Tensor) -> ()",
            "aten::f(int[x] a) -> ()",
            "aten::f(int?? a) -> ()",
        ] {
            assert!(Schema::parse(text).is_err(), "{text}");
        }
    }

    #[test]
    fn types_accept_their_kinds_and_none_when_optional() {
        let ty = |text| parse_type(text).unwrap_or_else(|error| panic!("{error}"));
        assert!(ty("Scalar").accepts(&Argument::Double(1.5)));
        assert!(ty("Scalar").accepts(&Argument::Bool(true)));
        assert!(!ty("Scalar").accepts(&Argument::Null));
        assert!(ty("Scalar?").accepts(&Argument::Null));
        assert!(ty("float").accepts(&Argument::Int(1)));
        assert!(!ty("int").accepts(&Argument::Double(1.0)));
        assert!(ty("int[]").accepts(&Argument::IntList(vec![])));
        assert!(!ty("int[]").accepts(&Argument::Null));
        assert!(ty("int[1]?").accepts(&Argument::Null));
        assert!(!ty("Tensor[]").accepts(&Argument::OptionalTensorList(vec![])));
        assert!(ty("Tensor?[]").accepts(&Argument::OptionalTensorList(vec![])));
        assert!(ty("ScalarType?").accepts(&Argument::Int(6)));
        assert!(!ty("str").accepts(&Argument::Int(0)));
    }
}
