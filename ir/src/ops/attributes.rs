//! Attributes in the text form: each op writes its attributes through an
//! [`AttributeWriter`] (`dims=[0, 2, 1] keepdim=false`) and reads them back
//! from an [`AttributeReader`], which the parser fills. Both sides of every
//! op use the same typed calls, so that what one writes the other reads.

use std::fmt::Write as _;
use std::str::FromStr;

use crate::graph::ValueId;
use crate::symbolic::Term;
use crate::types::{Dim, Real, Scalar, SymbolId};

/// The attributes of one op, written `key=value`, space-separated.
#[derive(Debug, Default)]
pub struct AttributeWriter {
    text: String,
}

impl AttributeWriter {
    fn key(&mut self, key: &str) {
        if !self.text.is_empty() {
            self.text.push(' ');
        }
        self.text.push_str(key);
        self.text.push('=');
    }

    pub fn int(&mut self, key: &str, value: impl Into<i128>) {
        self.key(key);
        let _ = write!(self.text, "{}", value.into());
    }

    pub fn ints<T: Copy + Into<i128>>(&mut self, key: &str, values: &[T]) {
        self.key(key);
        let items: Vec<String> = values.iter().map(|&v| v.into().to_string()).collect();
        let _ = write!(self.text, "[{}]", items.join(", "));
    }

    pub fn optional_int(&mut self, key: &str, value: Option<impl Into<i128>>) {
        match value {
            Some(value) => self.int(key, value),
            None => self.none(key),
        }
    }

    pub fn bool(&mut self, key: &str, value: bool) {
        self.key(key);
        let _ = write!(self.text, "{value}");
    }

    pub fn real(&mut self, key: &str, value: Real) {
        self.key(key);
        let _ = write!(self.text, "{value}");
    }

    /// A real only when present (fused clamp bounds).
    pub fn real_if_some(&mut self, key: &str, value: Option<Real>) {
        if let Some(value) = value {
            self.real(key, value);
        }
    }

    pub fn scalar(&mut self, key: &str, value: Scalar) {
        self.key(key);
        let _ = write!(self.text, "{value}");
    }

    /// A size or index that may be a symbol: `4` or `s2`.
    pub fn dim(&mut self, key: &str, value: Dim) {
        self.key(key);
        let _ = write!(self.text, "{value}");
    }

    /// A scalar that may be a symbol: `2.5`, `true` or `s2`.
    pub fn term(&mut self, key: &str, value: Term) {
        self.key(key);
        let _ = write!(self.text, "{value}");
    }

    pub fn optional_scalar(&mut self, key: &str, value: Option<Scalar>) {
        match value {
            Some(value) => self.scalar(key, value),
            None => self.none(key),
        }
    }

    fn none(&mut self, key: &str) {
        self.key(key);
        self.text.push_str("none");
    }

    /// A value written by the caller, already in the text form's syntax
    /// (the steps of a fused kernel).
    pub fn raw(&mut self, key: &str, text: &str) {
        self.key(key);
        self.text.push_str(text);
    }

    pub fn finish(self) -> String {
        self.text
    }
}

/// An attribute's value as the parser read it.
#[derive(Clone, Debug, PartialEq)]
pub enum AttributeValue {
    /// A number, `true`, `false` or `none`, as written.
    Atom(String),
    /// `[a, b, ...]`.
    List(Vec<AttributeValue>),
    /// `[f(in0); g(s0, in1) k=v]`: the steps of a fused kernel.
    Steps(Vec<StepText>),
}

/// One step of a fused kernel as the parser read it.
#[derive(Clone, Debug, PartialEq)]
pub struct StepText {
    pub name: String,
    /// `in0`, `s1`, ...
    pub operands: Vec<String>,
    pub attributes: AttributeReader,
}

/// A problem with an op's operands or attributes in the text form.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FormError {
    #[error("attribute {0} is missing")]
    Missing(String),
    #[error("attribute {key}: {problem}")]
    Invalid { key: String, problem: String },
    #[error("unknown attribute {0}")]
    Unknown(String),
    #[error("operand {0} is missing")]
    MissingOperand(&'static str),
    #[error("unexpected operand {0}")]
    UnexpectedOperand(String),
}

/// The attributes of one op, to be taken by the op's parser; whatever it
/// does not take is an error ([`AttributeReader::finish`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AttributeReader {
    entries: Vec<(String, AttributeValue)>,
}

impl AttributeReader {
    pub fn new(entries: Vec<(String, AttributeValue)>) -> Self {
        AttributeReader { entries }
    }

    fn take(&mut self, key: &str) -> Option<AttributeValue> {
        let position = self.entries.iter().position(|(name, _)| name == key)?;
        Some(self.entries.remove(position).1)
    }

    fn required(&mut self, key: &str) -> Result<AttributeValue, FormError> {
        self.take(key)
            .ok_or_else(|| FormError::Missing(key.to_string()))
    }

    fn invalid(key: &str, problem: impl Into<String>) -> FormError {
        FormError::Invalid {
            key: key.to_string(),
            problem: problem.into(),
        }
    }

    fn atom<T: FromStr>(key: &str, value: &AttributeValue) -> Result<T, FormError> {
        match value {
            AttributeValue::Atom(text) => text
                .parse()
                .map_err(|_| Self::invalid(key, format!("{text:?} is not a valid value"))),
            _ => Err(Self::invalid(key, "expected a single value")),
        }
    }

    pub fn int<T: FromStr>(&mut self, key: &str) -> Result<T, FormError> {
        let value = self.required(key)?;
        Self::atom(key, &value)
    }

    pub fn bool(&mut self, key: &str) -> Result<bool, FormError> {
        self.int(key)
    }

    pub fn ints<T: FromStr>(&mut self, key: &str) -> Result<Vec<T>, FormError> {
        match self.required(key)? {
            AttributeValue::List(items) => items.iter().map(|item| Self::atom(key, item)).collect(),
            _ => Err(Self::invalid(key, "expected a list")),
        }
    }

    /// A list written only when present.
    pub fn ints_if_present<T: FromStr>(&mut self, key: &str) -> Result<Option<Vec<T>>, FormError> {
        match self.take(key) {
            Some(AttributeValue::List(items)) => items
                .iter()
                .map(|item| Self::atom(key, item))
                .collect::<Result<_, _>>()
                .map(Some),
            Some(_) => Err(Self::invalid(key, "expected a list")),
            None => Ok(None),
        }
    }

    /// A two-element list.
    pub fn pair(&mut self, key: &str) -> Result<[u64; 2], FormError> {
        let values: Vec<u64> = self.ints(key)?;
        <[u64; 2]>::try_from(values).map_err(|_| Self::invalid(key, "expected two values"))
    }

    pub fn optional_int<T: FromStr>(&mut self, key: &str) -> Result<Option<T>, FormError> {
        match self.required(key)? {
            AttributeValue::Atom(text) if text == "none" => Ok(None),
            value => Self::atom(key, &value).map(Some),
        }
    }

    pub fn real(&mut self, key: &str) -> Result<Real, FormError> {
        let value = self.required(key)?;
        Self::atom(key, &value).map(Real)
    }

    /// A real written only when present.
    pub fn real_if_present(&mut self, key: &str) -> Result<Option<Real>, FormError> {
        match self.take(key) {
            Some(value) => Self::atom(key, &value).map(|value| Some(Real(value))),
            None => Ok(None),
        }
    }

    /// A scalar written only when present (an add's alpha).
    pub fn optional_scalar_if_present(&mut self, key: &str) -> Result<Option<Scalar>, FormError> {
        match self.take(key) {
            Some(value) => Self::scalar_of(key, &value).map(Some),
            None => Ok(None),
        }
    }

    pub fn scalar(&mut self, key: &str) -> Result<Scalar, FormError> {
        let value = self.required(key)?;
        Self::scalar_of(key, &value)
    }

    pub fn optional_scalar(&mut self, key: &str) -> Result<Option<Scalar>, FormError> {
        match self.required(key)? {
            AttributeValue::Atom(text) if text == "none" => Ok(None),
            value => Self::scalar_of(key, &value).map(Some),
        }
    }

    /// A size or index: a number, or a symbol `s2`.
    pub fn dim(&mut self, key: &str) -> Result<Dim, FormError> {
        match self.term(key)? {
            Term::Symbol(symbol) => Ok(Dim::Symbol(symbol)),
            Term::Const(Scalar::Int(size)) if size >= 0 => Ok(Dim::Fixed(size as u64)),
            Term::Const(other) => Err(Self::invalid(key, format!("{other} is not a size"))),
        }
    }

    /// A scalar, or a symbol `s2`.
    pub fn term(&mut self, key: &str) -> Result<Term, FormError> {
        let value = self.required(key)?;
        if let AttributeValue::Atom(text) = &value
            && let Some(number) = text.strip_prefix('s')
            && let Ok(index) = number.parse::<u32>()
        {
            return Ok(Term::Symbol(SymbolId(index)));
        }
        Self::scalar_of(key, &value).map(Term::Const)
    }

    /// A scalar keeps its kind in its spelling: `true`, `2`, `2.0`.
    fn scalar_of(key: &str, value: &AttributeValue) -> Result<Scalar, FormError> {
        let AttributeValue::Atom(text) = value else {
            return Err(Self::invalid(key, "expected a scalar"));
        };
        if let Ok(flag) = text.parse::<bool>() {
            return Ok(Scalar::Bool(flag));
        }
        if let Ok(integer) = text.parse::<i64>() {
            return Ok(Scalar::Int(integer));
        }
        text.parse::<f64>()
            .map(Scalar::Float)
            .map_err(|_| Self::invalid(key, format!("{text:?} is not a scalar")))
    }

    /// Whether the attribute `key` is written (without taking it).
    pub fn has(&self, key: &str) -> bool {
        self.entries.iter().any(|(name, _)| name == key)
    }

    pub fn steps(&mut self, key: &str) -> Result<Vec<StepText>, FormError> {
        match self.required(key)? {
            AttributeValue::Steps(steps) => Ok(steps),
            _ => Err(Self::invalid(key, "expected steps")),
        }
    }

    /// Fails on attributes no one took.
    pub fn finish(self) -> Result<(), FormError> {
        match self.entries.into_iter().next() {
            Some((key, _)) => Err(FormError::Unknown(key)),
            None => Ok(()),
        }
    }
}

/// The operands of one op as the parser read them (`%3`, or `bias=%4`), to
/// be taken by the op's parser in slot order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OperandReader {
    positional: std::collections::VecDeque<ValueId>,
    named: Vec<(String, ValueId)>,
}

impl OperandReader {
    pub fn new(operands: Vec<(Option<String>, ValueId)>) -> Self {
        let mut reader = OperandReader::default();
        for (name, value) in operands {
            match name {
                Some(name) => reader.named.push((name, value)),
                None => reader.positional.push_back(value),
            }
        }
        reader
    }

    /// The next positional operand, `what` naming it in the error.
    pub fn positional(&mut self, what: &'static str) -> Result<ValueId, FormError> {
        self.positional
            .pop_front()
            .ok_or(FormError::MissingOperand(what))
    }

    /// The operand named `name`, if written.
    pub fn named(&mut self, name: &str) -> Option<ValueId> {
        let position = self.named.iter().position(|(key, _)| key == name)?;
        Some(self.named.remove(position).1)
    }

    /// The operand named `name`, which must be written.
    pub fn required(&mut self, name: &'static str) -> Result<ValueId, FormError> {
        self.named(name).ok_or(FormError::MissingOperand(name))
    }

    /// Every positional operand not taken yet.
    pub fn rest(&mut self) -> Vec<ValueId> {
        self.positional.drain(..).collect()
    }

    /// Fails on operands no one took.
    pub fn finish(self) -> Result<(), FormError> {
        if let Some(value) = self.positional.front() {
            return Err(FormError::UnexpectedOperand(value.to_string()));
        }
        match self.named.into_iter().next() {
            Some((name, value)) => Err(FormError::UnexpectedOperand(format!("{name}={value}"))),
            None => Ok(()),
        }
    }
}
