//! Reads the IR's text form ([`crate::to_text`]) back into a graph, so that
//! passes and the verifier can be tested on small hand-written graphs.
//!
//! Lines starting with `;` are comments. Values keep the numbers the text
//! gives them; a value may be read on a line before the one that writes it
//! (the verifier, not the parser, rejects that). Each op's operands and
//! attributes are read by the op's family (`crate::ops`).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use crate::graph::{Graph, OutputKind, ValueData, ValueId, ValueKind};
use crate::op::{Op, parse_op};
use crate::ops::attributes::{AttributeReader, AttributeValue, FormError, OperandReader, StepText};
use crate::ops::control::{Jump, JumpIfFalse, Label, LabelId};
use crate::symbolic::{Poly, ScalarKind, SymOp, SymbolDef, Term, element_scalar};
use crate::types::{DType, Dim, Scalar, SymbolId, TensorType};

/// Why a text does not parse: the line (1-based) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {problem}")]
pub struct ParseError {
    pub line: usize,
    pub problem: ParseProblem,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseProblem {
    #[error("expected {expected}, found {found:?}")]
    Expected {
        expected: &'static str,
        found: String,
    },
    #[error("unknown element type {0}")]
    ElementType(String),
    #[error("unknown op {0}")]
    UnknownOp(String),
    #[error("{0}")]
    Form(#[from] FormError),
    #[error("%{0} is declared twice with different types or sources")]
    Redeclared(usize),
    #[error("%{0} is never declared")]
    Undeclared(usize),
    #[error("symbol s{0} is declared out of order")]
    SymbolOrder(usize),
    #[error("symbol definition {0:?}: {1}")]
    SymbolDef(String, String),
    #[error("{0}")]
    Data(String),
    #[error("the text has no graph")]
    NoGraph,
}

/// Parses one graph. Its constants own their bytes.
pub fn parse(text: &str) -> Result<Graph<'static>, ParseError> {
    let lines = lex_lines(text)?;
    Builder::default().build(lines)
}

/// One line of the text, read.
enum Line {
    Header {
        name: String,
        arena: u64,
    },
    Symbol {
        index: usize,
        kind: ScalarKind,
        bound: Option<u64>,
        def: Option<String>,
        origin: String,
    },
    Check {
        condition: SymbolId,
        message: String,
    },
    Value {
        result: Declared,
        source: Source,
    },
    Node {
        results: Vec<Declared>,
        name: String,
        operands: Vec<(Option<String>, usize)>,
        attributes: AttributeReader,
    },
    Label(LabelId),
    Jump(LabelId),
    JumpIfFalse(usize, LabelId),
    Return(Vec<(usize, OutputKind)>),
    End,
}

/// `%3: f32[2] @64`.
struct Declared {
    value: usize,
    ty: TensorType,
    offset: Option<u64>,
}

enum Source {
    Input(usize),
    Constant(Vec<u8>),
    State(Option<Vec<u8>>),
}

fn lex_lines(text: &str) -> Result<Vec<(usize, Line)>, ParseError> {
    let mut lines = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with(';') {
            continue;
        }
        let line = Cursor::new(trimmed).line().map_err(|problem| ParseError {
            line: index + 1,
            problem,
        })?;
        lines.push((index + 1, line));
    }
    Ok(lines)
}

/// Reads one line.
struct Cursor<'t> {
    text: &'t str,
    at: usize,
}

type Parsed<T> = Result<T, ParseProblem>;

impl<'t> Cursor<'t> {
    fn new(text: &'t str) -> Self {
        Cursor { text, at: 0 }
    }

    fn rest(&self) -> &'t str {
        &self.text[self.at..]
    }

    fn skip_spaces(&mut self) {
        let rest = self.rest();
        self.at += rest.len() - rest.trim_start().len();
    }

    fn peek(&mut self) -> Option<char> {
        self.skip_spaces();
        self.rest().chars().next()
    }

    fn expected<T>(&mut self, expected: &'static str) -> Parsed<T> {
        let found = self.rest().chars().take(20).collect();
        Err(ParseProblem::Expected { expected, found })
    }

    /// Consumes `token` if the text continues with it.
    fn eat(&mut self, token: &str) -> bool {
        self.skip_spaces();
        if self.rest().starts_with(token) {
            self.at += token.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, token: &'static str) -> Parsed<()> {
        if self.eat(token) {
            Ok(())
        } else {
            self.expected(token)
        }
    }

    /// A run of letters, digits and `_ . + -`: a name, a number, or a word.
    fn word(&mut self) -> Parsed<&'t str> {
        self.skip_spaces();
        let rest = self.rest();
        let length = rest
            .find(|c: char| !(c.is_alphanumeric() || "_.+-".contains(c)))
            .unwrap_or(rest.len());
        if length == 0 {
            return self.expected("a word");
        }
        self.at += length;
        Ok(&rest[..length])
    }

    fn number<T: std::str::FromStr>(&mut self, what: &'static str) -> Parsed<T> {
        let start = self.at;
        let word = self.word()?;
        word.parse().or_else(|_| {
            self.at = start;
            self.expected(what)
        })
    }

    /// `%12`.
    fn value(&mut self) -> Parsed<usize> {
        self.expect("%")?;
        self.number("a value number")
    }

    fn label(&mut self) -> Parsed<LabelId> {
        self.expect("L")?;
        self.number("a label number").map(LabelId)
    }

    fn is_done(&mut self) -> bool {
        self.skip_spaces();
        self.rest().is_empty() || self.rest().starts_with("//")
    }

    fn end(&mut self) -> Parsed<()> {
        if self.is_done() {
            Ok(())
        } else {
            self.expected("the end of the line")
        }
    }

    fn line(mut self) -> Parsed<Line> {
        if self.eat("}") {
            self.end()?;
            return Ok(Line::End);
        }
        if self.peek() == Some('%') {
            return self.value_or_node();
        }
        let word = self.word()?;
        let line = match word {
            "graph" => {
                let name = self.word()?.to_string();
                let mut arena = 0;
                if self.eat("(") {
                    self.expect("arena")?;
                    arena = self.number("the arena's size")?;
                    self.expect("bytes")?;
                    self.expect(")")?;
                }
                self.expect("{")?;
                Line::Header { name, arena }
            }
            "symbol" => {
                self.expect("s")?;
                let index: usize = self.number("a symbol number")?;
                let kind = match self.eat(":") {
                    true => {
                        let name = self.word()?;
                        ScalarKind::from_name(name).ok_or_else(|| ParseProblem::Expected {
                            expected: "int, float or bool",
                            found: name.to_string(),
                        })?
                    }
                    false => ScalarKind::Int,
                };
                let bound = match self.eat("<=") {
                    true => Some(self.number("a bound")?),
                    false => None,
                };
                let rest = self.rest();
                let (def, origin) = rest.split_once("//").unwrap_or((rest, ""));
                let def = match def.trim().strip_prefix('=') {
                    Some(def) => Some(def.trim().to_string()),
                    None if def.trim().is_empty() => None,
                    None => return self.expected("`= definition` or the end of the line"),
                };
                self.at = self.text.len();
                Line::Symbol {
                    index,
                    kind,
                    bound,
                    def,
                    origin: origin.trim().to_string(),
                }
            }
            "check" => {
                self.expect("s")?;
                let condition = SymbolId(self.number("a symbol number")?);
                let message = match self.eat("//") {
                    true => self.rest().trim().to_string(),
                    false => String::new(),
                };
                self.at = self.text.len();
                Line::Check { condition, message }
            }
            "jump" => Line::Jump(self.label()?),
            "jump_if_false" => {
                let condition = self.value()?;
                Line::JumpIfFalse(condition, self.label()?)
            }
            "return" => {
                let mut values = Vec::new();
                while !self.is_done() {
                    let kind = if self.peek() == Some('%') {
                        OutputKind::Tensor
                    } else {
                        let name = self.word()?;
                        OutputKind::from_name(name).ok_or_else(|| ParseProblem::Expected {
                            expected: "int, bool, double or a value",
                            found: name.to_string(),
                        })?
                    };
                    values.push((self.value()?, kind));
                    if !self.eat(",") {
                        break;
                    }
                }
                Line::Return(values)
            }
            label if label.starts_with('L') && self.eat(":") => {
                let number = label[1..].parse().or_else(|_| self.expected("a label"))?;
                Line::Label(LabelId(number))
            }
            _ => return self.expected("a value, a node, a label or a keyword"),
        };
        self.end()?;
        Ok(line)
    }

    /// `%3: f32[2] = input 0`, or a node writing `%3, %4`.
    fn value_or_node(&mut self) -> Parsed<Line> {
        let mut results = vec![self.result()?];
        while self.eat(",") {
            results.push(self.result()?);
        }
        self.expect("=")?;
        let name = self.word()?.to_string();
        let source = match name.as_str() {
            "input" => Some(Source::Input(self.number("an input position")?)),
            "constant" => Some(Source::Constant(self.data(&results[0].ty)?)),
            "state" if self.is_done() => Some(Source::State(None)),
            "state" => Some(Source::State(Some(self.data(&results[0].ty)?))),
            _ => None,
        };
        if let Some(source) = source {
            self.end()?;
            let [result] = <[Declared; 1]>::try_from(results)
                .or_else(|_| self.expected("one value for an input, constant or state"))?;
            return Ok(Line::Value { result, source });
        }
        self.expect("(")?;
        let mut operands = Vec::new();
        while !self.eat(")") {
            let name = match self.peek() {
                Some('%') => None,
                _ => {
                    let name = self.word()?.to_string();
                    self.expect("=")?;
                    Some(name)
                }
            };
            operands.push((name, self.value()?));
            if !self.eat(",") {
                self.expect(")")?;
                break;
            }
        }
        let attributes = self.attributes(&[])?;
        self.end()?;
        Ok(Line::Node {
            results,
            name,
            operands,
            attributes,
        })
    }

    fn result(&mut self) -> Parsed<Declared> {
        let value = self.value()?;
        self.expect(":")?;
        let ty = self.ty()?;
        let offset = match self.eat("@") {
            true => Some(self.number("an offset")?),
            false => None,
        };
        Ok(Declared { value, ty, offset })
    }

    /// `f32[2,s0]{order [1, 0]}`.
    fn ty(&mut self) -> Parsed<TensorType> {
        let name = self.word()?;
        let dtype = DType::from_name(name).ok_or_else(|| ParseProblem::ElementType(name.into()))?;
        self.expect("[")?;
        let mut shape = Vec::new();
        while !self.eat("]") {
            let dim = if self.eat("s") {
                Dim::Symbol(SymbolId(self.number("a symbol number")?))
            } else {
                Dim::Fixed(self.number("a size")?)
            };
            shape.push(dim);
            if !self.eat(",") {
                self.expect("]")?;
                break;
            }
        }
        let dim_order = if self.eat("{") {
            self.expect("order")?;
            let order = self.list(|cursor| cursor.number("a dimension"))?;
            self.expect("}")?;
            order
        } else {
            (0..shape.len() as u8).collect()
        };
        Ok(TensorType {
            dtype,
            shape,
            dim_order,
        })
    }

    /// `[a, b, ...]`, each item read by `item`.
    fn list<T>(&mut self, mut item: impl FnMut(&mut Self) -> Parsed<T>) -> Parsed<Vec<T>> {
        self.expect("[")?;
        let mut items = Vec::new();
        while !self.eat("]") {
            items.push(item(self)?);
            if !self.eat(",") {
                self.expect("]")?;
                break;
            }
        }
        Ok(items)
    }

    /// A constant's elements, or `N bytes` (zeros).
    fn data(&mut self, ty: &TensorType) -> Parsed<Vec<u8>> {
        if self.peek() != Some('[') {
            let count: usize = self.number("elements or a byte count")?;
            self.expect("bytes")?;
            return Ok(vec![0; count]);
        }
        let dtype = ty.dtype;
        let elements = self.list(|cursor| {
            let word = cursor.word()?;
            element_bytes(word, dtype)
                .ok_or_else(|| ParseProblem::Data(format!("{word} is not a {dtype} element")))
        })?;
        Ok(elements.concat())
    }

    /// `key=value ...` up to the end of the line or one of `stops`.
    fn attributes(&mut self, stops: &[char]) -> Parsed<AttributeReader> {
        let mut entries = Vec::new();
        while !self.is_done() && !self.peek().is_some_and(|c| stops.contains(&c)) {
            let key = self.word()?.to_string();
            self.expect("=")?;
            entries.push((key, self.attribute_value()?));
        }
        Ok(AttributeReader::new(entries))
    }

    fn attribute_value(&mut self) -> Parsed<AttributeValue> {
        if self.peek() != Some('[') {
            return Ok(AttributeValue::Atom(self.word()?.to_string()));
        }
        // A list of values, or the steps of a fused kernel: `name(`.
        let start = self.at;
        self.expect("[")?;
        let is_steps = self.word().is_ok() && self.peek() == Some('(');
        self.at = start;
        if !is_steps {
            return self.list(Self::attribute_value).map(AttributeValue::List);
        }
        self.expect("[")?;
        let mut steps = Vec::new();
        loop {
            let name = self.word()?.to_string();
            self.expect("(")?;
            let mut operands = Vec::new();
            while !self.eat(")") {
                operands.push(self.word()?.to_string());
                if !self.eat(",") {
                    self.expect(")")?;
                    break;
                }
            }
            let attributes = self.attributes(&[';', ']'])?;
            steps.push(StepText {
                name,
                operands,
                attributes,
            });
            if self.eat("]") {
                return Ok(AttributeValue::Steps(steps));
            }
            self.expect(";")?;
        }
    }
}

/// The bytes of one element written as the text form writes it.
fn element_bytes(word: &str, dtype: DType) -> Option<Vec<u8>> {
    Some(match dtype {
        DType::Bool => vec![u8::from(word.parse::<bool>().ok()?)],
        DType::U8 => word.parse::<u8>().ok()?.to_le_bytes().to_vec(),
        DType::I8 => word.parse::<i8>().ok()?.to_le_bytes().to_vec(),
        DType::I16 => word.parse::<i16>().ok()?.to_le_bytes().to_vec(),
        DType::I32 => word.parse::<i32>().ok()?.to_le_bytes().to_vec(),
        DType::I64 => word.parse::<i64>().ok()?.to_le_bytes().to_vec(),
        DType::F16 | DType::BF16 => u16::from_str_radix(word.strip_prefix("0x")?, 16)
            .ok()?
            .to_le_bytes()
            .to_vec(),
        DType::F32 => word.parse::<f32>().ok()?.to_le_bytes().to_vec(),
        DType::F64 => word.parse::<f64>().ok()?.to_le_bytes().to_vec(),
    })
}

/// A line of the schedule, once every value is declared.
enum Statement {
    Node {
        name: String,
        operands: Vec<(Option<String>, usize)>,
        attributes: AttributeReader,
        outputs: Vec<usize>,
    },
    Label(LabelId),
    Jump(LabelId),
    JumpIfFalse(usize, LabelId),
    Return(Vec<(usize, OutputKind)>),
}

/// A symbol line, read once the values are known.
struct SymbolLine {
    line: usize,
    index: usize,
    kind: ScalarKind,
    bound: Option<u64>,
    def: Option<String>,
    origin: String,
}

/// Turns the lines into a graph.
#[derive(Default)]
struct Builder {
    /// Each value's type, place and source (`None`: written by nodes), by
    /// number, from every line that declares it.
    declared: BTreeMap<usize, (TensorType, Option<u64>, Option<Source>)>,
}

impl Builder {
    fn declare(&mut self, result: Declared, source: Option<Source>) -> Parsed<()> {
        let number = result.value;
        match self.declared.get(&number) {
            None => {
                self.declared
                    .insert(number, (result.ty, result.offset, source));
                Ok(())
            }
            // A value several nodes write (or a node writes a value of
            // another kind, which the verifier judges) is declared alike
            // each time.
            Some((ty, offset, _))
                if source.is_none() && *ty == result.ty && *offset == result.offset =>
            {
                Ok(())
            }
            Some(_) => Err(ParseProblem::Redeclared(number)),
        }
    }

    fn build(mut self, lines: Vec<(usize, Line)>) -> Result<Graph<'static>, ParseError> {
        let at = |line: usize| move |problem: ParseProblem| ParseError { line, problem };
        let mut graph: Option<Graph<'static>> = None;
        let mut symbols = Vec::new();
        let mut checks = Vec::new();
        let mut body = Vec::new();
        for (line, content) in lines {
            match content {
                Line::Header { name, arena } => {
                    let mut new = Graph::new(name);
                    new.set_arena_size(arena);
                    graph = Some(new);
                }
                Line::Symbol {
                    index,
                    kind,
                    bound,
                    def,
                    origin,
                } => symbols.push(SymbolLine {
                    line,
                    index,
                    kind,
                    bound,
                    def,
                    origin,
                }),
                Line::Check { condition, message } => checks.push((line, condition, message)),
                Line::Value { result, source } => {
                    self.declare(result, Some(source)).map_err(at(line))?
                }
                Line::Node {
                    results,
                    name,
                    operands,
                    attributes,
                } => {
                    let numbers = results.iter().map(|result| result.value).collect();
                    for result in results {
                        self.declare(result, None).map_err(at(line))?;
                    }
                    body.push((
                        line,
                        Statement::Node {
                            name,
                            operands,
                            attributes,
                            outputs: numbers,
                        },
                    ));
                }
                Line::End => {}
                Line::Label(label) => body.push((line, Statement::Label(label))),
                Line::Jump(label) => body.push((line, Statement::Jump(label))),
                Line::JumpIfFalse(condition, label) => {
                    body.push((line, Statement::JumpIfFalse(condition, label)))
                }
                Line::Return(values) => body.push((line, Statement::Return(values))),
            }
        }
        let mut graph = graph.ok_or(ParseError {
            line: 0,
            problem: ParseProblem::NoGraph,
        })?;
        let ids = self.add_values(&mut graph).map_err(at(0))?;
        let id = |number: usize| {
            ids.get(&number)
                .copied()
                .ok_or(ParseProblem::Undeclared(number))
        };
        for symbol in symbols {
            let line = symbol.line;
            add_symbol(&mut graph, symbol, &id).map_err(at(line))?;
        }
        for (line, condition, message) in checks {
            // The verifier judges the condition's kind.
            let check = crate::symbolic::Check { condition, message };
            graph.symbol_table_mut().push_check(check);
            let _ = line;
        }
        for (line, statement) in body {
            let node = (|| -> Parsed<()> {
                match statement {
                    Statement::Node {
                        name,
                        operands,
                        mut attributes,
                        outputs,
                    } => {
                        let operands = operands
                            .into_iter()
                            .map(|(name, number)| id(number).map(|value| (name, value)))
                            .collect::<Parsed<Vec<_>>>()?;
                        let mut operands = OperandReader::new(operands);
                        let op = parse_op(&name, &mut operands, &mut attributes)
                            .ok_or_else(|| ParseProblem::UnknownOp(name.clone()))??;
                        operands.finish()?;
                        attributes.finish()?;
                        let outputs = outputs.into_iter().map(id).collect::<Parsed<_>>()?;
                        graph.push_node(op, outputs);
                    }
                    Statement::Label(label) => {
                        graph.push_node(Op::Label(Label { label }), Vec::new());
                    }
                    Statement::Jump(label) => {
                        graph.push_node(Op::Jump(Jump { label }), Vec::new());
                    }
                    Statement::JumpIfFalse(condition, label) => {
                        let condition = id(condition)?;
                        let op = Op::JumpIfFalse(JumpIfFalse { condition, label });
                        graph.push_node(op, Vec::new());
                    }
                    Statement::Return(values) => {
                        let outputs = values
                            .into_iter()
                            .map(|(number, kind)| id(number).map(|value| (value, kind)))
                            .collect::<Parsed<_>>()?;
                        graph.set_outputs_with_kinds(outputs);
                    }
                }
                Ok(())
            })();
            node.map_err(at(line))?;
        }
        Ok(graph)
    }

    /// Adds every declared value, numbered as the text numbers them (gaps
    /// become unused values).
    fn add_values(&mut self, graph: &mut Graph<'static>) -> Parsed<HashMap<usize, ValueId>> {
        let mut ids = HashMap::new();
        let last = self.declared.keys().next_back().copied();
        for number in 0..last.map_or(0, |last| last + 1) {
            let Some((ty, offset, source)) = self.declared.remove(&number) else {
                graph.add_value(ValueData::computed(TensorType {
                    dtype: DType::F32,
                    shape: Vec::new(),
                    dim_order: Vec::new(),
                }));
                continue;
            };
            let kind = match source {
                None => ValueKind::Computed,
                Some(Source::Input(position)) => ValueKind::Input(position),
                Some(Source::Constant(bytes)) => ValueKind::Constant(Cow::Owned(bytes)),
                Some(Source::State(initial)) => ValueKind::State {
                    initial: initial.map(Cow::Owned),
                },
            };
            ids.insert(number, graph.add_value(ValueData { ty, kind, offset }));
        }
        Ok(ids)
    }
}

/// Adds the symbol of a `symbol` line, in order.
fn add_symbol(
    graph: &mut Graph<'static>,
    symbol: SymbolLine,
    id: &impl Fn(usize) -> Parsed<ValueId>,
) -> Parsed<()> {
    if symbol.index != graph.symbol_table().len() {
        return Err(ParseProblem::SymbolOrder(symbol.index));
    }
    let (def, range) = match symbol.def.as_deref() {
        None | Some("input") => (SymbolDef::Input, None),
        Some(text) => match text.strip_prefix("element") {
            Some(value) => {
                let mut cursor = Cursor::new(value.trim());
                let value = id(cursor.value()?)?;
                cursor.end()?;
                let (_, range) = element_scalar(graph.value(value).ty.dtype);
                (SymbolDef::Element(value), Some(range))
            }
            None => (symbol_def(text)?, None),
        },
    };
    let table = graph.symbol_table_mut();
    table.insert(def, symbol.kind, range, symbol.bound, symbol.origin);
    Ok(())
}

/// `floordiv(s1, 2)`, or a polynomial `2*s0*s1 + 3*s2 - 4`.
fn symbol_def(text: &str) -> Parsed<SymbolDef> {
    let invalid = |why: &str| ParseProblem::SymbolDef(text.to_string(), why.to_string());
    if let Some((name, args)) = text.split_once('(') {
        let op = SymOp::from_name(name.trim()).ok_or_else(|| invalid("unknown operation"))?;
        let args = args
            .trim()
            .strip_suffix(')')
            .ok_or_else(|| invalid("no closing parenthesis"))?;
        let terms = args
            .split(',')
            .map(|arg| term(arg.trim()).ok_or_else(|| invalid("not a scalar or a symbol")))
            .collect::<Parsed<Vec<_>>>()?;
        return Ok(SymbolDef::Op(op, terms));
    }
    let mut poly = Poly::default();
    let mut sign = 1;
    for (position, token) in text.split_whitespace().enumerate() {
        match (position % 2, token) {
            (1, "+") => sign = 1,
            (1, "-") => sign = -1,
            (0, monomial) => {
                let (negative, monomial) = match monomial.strip_prefix('-') {
                    Some(rest) if position == 0 => (true, rest),
                    _ => (false, monomial),
                };
                let mut product = Poly::constant(if negative { -sign } else { sign });
                for factor in monomial.split('*') {
                    let factor = match term(factor) {
                        Some(Term::Const(Scalar::Int(value))) => Poly::constant(value),
                        Some(Term::Symbol(symbol)) => Poly::symbol(symbol),
                        _ => return Err(invalid("a monomial is a product of ints and symbols")),
                    };
                    product = product.mul(&factor);
                }
                poly = poly.add(&product);
            }
            _ => return Err(invalid("expected + or - between monomials")),
        }
    }
    Ok(SymbolDef::Poly(poly))
}

/// `s3`, `true`, `4` or `2.5`.
fn term(text: &str) -> Option<Term> {
    if let Some(number) = text.strip_prefix('s')
        && let Ok(index) = number.parse::<u32>()
    {
        return Some(Term::Symbol(SymbolId(index)));
    }
    let scalar = if let Ok(flag) = text.parse::<bool>() {
        Scalar::Bool(flag)
    } else if let Ok(integer) = text.parse::<i64>() {
        Scalar::Int(integer)
    } else {
        Scalar::Float(text.parse::<f64>().ok()?)
    };
    Some(Term::Const(scalar))
}
