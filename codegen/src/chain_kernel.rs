//! Elementwise chains (a convolution's epilogue steps) as AVX-512 machine
//! code, emitted with iced-x86 like the microkernels: Cranelift's vectors
//! are four f32 lanes, these sixteen, which is what a chain of a dozen
//! steps over every output element of a network needs (a quantized
//! program's requantization is compute-bound, not memory-bound).
//!
//! `chain(block, pixels, channels, row_bytes, operands)` (System V
//! arguments) applies the chain in place to `channels` f32 elements of each
//! of `pixels` pixels, `row_bytes` apart from `block` on: sixteen channels
//! a register, the last register masked. `operands` points at one pointer
//! per operand of the chain (after `in0`, the element itself), at its
//! element for the block's first: an operand laid out as the output
//! ([`Reach::Beside`]) moves with the pixel and the channel, one of one
//! value per channel ([`Reach::PerChannel`]) with the channel alone, and
//! one value ([`Reach::One`]) not at all.
//!
//! Each step's expression (`Func::expr`, computed in f32) is lowered
//! node by node to the instruction that rounds as Cranelift's lowering of
//! the same node does: adds, subtracts, multiplies and divides in the
//! expression's operand order, `round` to nearest even (`vrndscaleps` 0),
//! negation and absolute value on the sign bit, and the NaN-keeping bounds
//! `x < b ? b : x` and `x > b ? b : x` as `vmaxps`/`vminps` with the bound
//! first (each returns its second operand unless the first is strictly
//! beyond it, which is the same select, NaN and signed zeros included). A
//! chain with any other node, or too many values for the 32 registers, is
//! not compiled (the Cranelift map applies it).

use iced_x86::IcedError;
use iced_x86::code_asm::registers::k::k1;
use iced_x86::code_asm::registers::zmm::*;
use iced_x86::code_asm::{
    AsmRegister64, AsmRegisterZmm, CodeAssembler, CodeLabel, dword_ptr, ptr, qword_ptr, r8, r9,
    r10, r11, rax, rcx, rdi, rdx, rsi,
};
use ptec_ir::ops::expr::{Binary, Expr, Unary};
use ptec_ir::ops::fused::StepInput;

/// How an epilogue operand's element for an output element is found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Reach {
    /// Laid out as the output.
    Beside,
    /// One value per channel, contiguous.
    PerChannel,
    /// One value for every element.
    One,
}

/// The most operands a chain kernel reads besides the element (one
/// pointer register each).
const MAX_OPERANDS: usize = 4;

const ZMM: [AsmRegisterZmm; 32] = [
    zmm0, zmm1, zmm2, zmm3, zmm4, zmm5, zmm6, zmm7, zmm8, zmm9, zmm10, zmm11, zmm12, zmm13, zmm14,
    zmm15, zmm16, zmm17, zmm18, zmm19, zmm20, zmm21, zmm22, zmm23, zmm24, zmm25, zmm26, zmm27,
    zmm28, zmm29, zmm30, zmm31,
];

const POINTERS: [AsmRegister64; MAX_OPERANDS] = [r9, r10, r11, rax];

/// One step: its expression (in f32) and what its operands are.
pub(crate) struct Step<'e> {
    pub expr: &'e Expr,
    pub inputs: &'e [StepInput],
}

/// Registers of a chain: the element's and operands' first, then one per
/// constant (loaded once), then one per node of the steps' expressions.
struct Plan {
    constants: Vec<u32>,
    nodes: usize,
}

/// The f32 bits of every constant the steps read, once each, and the
/// number of other nodes; `None` for a node the kernel does not compute.
fn plan(steps: &[Step<'_>]) -> Option<Plan> {
    fn visit(expr: &Expr, plan: &mut Plan) -> Option<()> {
        match expr {
            Expr::Operand(_) => Some(()),
            Expr::Constant(value) => {
                let bits = (value.as_f64() as f32).to_bits();
                if !plan.constants.contains(&bits) {
                    plan.constants.push(bits);
                }
                Some(())
            }
            Expr::Unary(Unary::Round, x) => {
                plan.nodes += 1;
                visit(x, plan)
            }
            Expr::Unary(Unary::Neg | Unary::Abs, x) => {
                plan.nodes += 1;
                let mask = match expr {
                    Expr::Unary(Unary::Neg, _) => SIGN,
                    _ => !SIGN,
                };
                if !plan.constants.contains(&mask) {
                    plan.constants.push(mask);
                }
                visit(x, plan)
            }
            Expr::Binary(
                Binary::Add
                | Binary::Sub
                | Binary::Mul
                | Binary::Div
                | Binary::AtLeast
                | Binary::AtMost,
                a,
                b,
            ) => {
                plan.nodes += 1;
                visit(a, plan)?;
                visit(b, plan)
            }
            _ => None,
        }
    }
    let mut plan = Plan {
        constants: Vec::new(),
        nodes: 0,
    };
    for step in steps {
        visit(step.expr, &mut plan)?;
    }
    Some(plan)
}

/// The sign bit of an f32.
const SIGN: u32 = 0x8000_0000;

/// Emits the nodes of one vector's steps.
struct Lowering<'p> {
    constants: &'p [u32],
    /// The register of the first constant.
    constant_base: usize,
    /// The next register for a node.
    next: usize,
}

impl Lowering<'_> {
    fn constant(&self, bits: u32) -> AsmRegisterZmm {
        let index = self.constants.iter().position(|&c| c == bits);
        ZMM[self.constant_base + index.unwrap_or(0)]
    }

    fn fresh(&mut self) -> AsmRegisterZmm {
        let register = ZMM[self.next];
        self.next += 1;
        register
    }

    fn lower(
        &mut self,
        asm: &mut CodeAssembler,
        expr: &Expr,
        operands: &[AsmRegisterZmm],
    ) -> Result<AsmRegisterZmm, IcedError> {
        Ok(match expr {
            Expr::Operand(index) => operands[*index],
            Expr::Constant(value) => self.constant((value.as_f64() as f32).to_bits()),
            Expr::Unary(op, x) => {
                let x = self.lower(asm, x, operands)?;
                let out = self.fresh();
                match op {
                    Unary::Round => asm.vrndscaleps(out, x, 0)?,
                    Unary::Neg => asm.vpxord(out, x, self.constant(SIGN))?,
                    _ => asm.vpandd(out, x, self.constant(!SIGN))?,
                }
                out
            }
            Expr::Binary(op, a, b) => {
                let a = self.lower(asm, a, operands)?;
                let b = self.lower(asm, b, operands)?;
                let out = self.fresh();
                match op {
                    Binary::Add => asm.vaddps(out, a, b)?,
                    Binary::Sub => asm.vsubps(out, a, b)?,
                    Binary::Mul => asm.vmulps(out, a, b)?,
                    Binary::Div => asm.vdivps(out, a, b)?,
                    Binary::AtLeast => asm.vmaxps(out, b, a)?,
                    _ => asm.vminps(out, b, a)?,
                }
                out
            }
            // `plan` admitted no other node.
            _ => operands[0],
        })
    }
}

/// The machine code of the chain `steps` over operands read as `reaches`,
/// or `None` when a node is not one the kernel computes or the values do
/// not fit the registers.
pub(crate) fn chain(steps: &[Step<'_>], reaches: &[Reach]) -> Option<Result<Vec<u8>, IcedError>> {
    let plan = plan(steps)?;
    let constant_base = 1 + reaches.len();
    let registers = constant_base + plan.constants.len() + plan.nodes;
    if reaches.len() > MAX_OPERANDS || registers > ZMM.len() || steps.is_empty() {
        return None;
    }
    Some(assemble(steps, reaches, &plan, constant_base))
}

fn assemble(
    steps: &[Step<'_>],
    reaches: &[Reach],
    plan: &Plan,
    constant_base: usize,
) -> Result<Vec<u8>, IcedError> {
    use iced_x86::code_asm::registers::gpr32::{eax, r9d};
    let mut asm = CodeAssembler::new(64)?;
    let mut labels: Vec<CodeLabel> = plan.constants.iter().map(|_| asm.create_label()).collect();
    // The last register's mask: the channels past the whole registers.
    asm.mov(r9, rdx)?;
    asm.and(r9, 15)?;
    asm.mov(eax, 0xFFFF)?;
    asm.bzhi(eax, eax, r9d)?;
    asm.kmovw(k1, eax)?;
    // rdx: the bytes of the whole registers of a pixel.
    asm.and(rdx, -16)?;
    asm.shl(rdx, 2)?;
    for (index, pointer) in POINTERS.iter().take(reaches.len()).enumerate() {
        asm.mov(*pointer, qword_ptr(r8 + 8 * index as i32))?;
    }
    for (index, label) in labels.iter().enumerate() {
        asm.vbroadcastss(ZMM[constant_base + index], dword_ptr(*label))?;
    }
    for (index, reach) in reaches.iter().enumerate() {
        if *reach == Reach::One {
            asm.vbroadcastss(ZMM[1 + index], dword_ptr(POINTERS[index]))?;
        }
    }
    let mut end = asm.create_label();
    let mut pixel = asm.create_label();
    asm.test(rsi, rsi)?;
    asm.jle(end)?;
    asm.set_label(&mut pixel)?;
    asm.xor(r8, r8)?;
    let mut tail = asm.create_label();
    let mut vector = asm.create_label();
    asm.cmp(r8, rdx)?;
    asm.jge(tail)?;
    asm.set_label(&mut vector)?;
    body(&mut asm, steps, reaches, plan, constant_base, false)?;
    asm.add(r8, 64)?;
    asm.cmp(r8, rdx)?;
    asm.jl(vector)?;
    asm.set_label(&mut tail)?;
    let mut next = asm.create_label();
    asm.kortestw(k1, k1)?;
    asm.jz(next)?;
    body(&mut asm, steps, reaches, plan, constant_base, true)?;
    asm.set_label(&mut next)?;
    asm.add(rdi, rcx)?;
    for (index, reach) in reaches.iter().enumerate() {
        if *reach == Reach::Beside {
            asm.add(POINTERS[index], rcx)?;
        }
    }
    asm.dec(rsi)?;
    asm.jnz(pixel)?;
    asm.set_label(&mut end)?;
    asm.vzeroupper()?;
    asm.ret()?;
    for (label, &bits) in labels.iter_mut().zip(&plan.constants) {
        asm.set_label(label)?;
        asm.dd(&[bits])?;
    }
    asm.assemble(0)
}

/// One register of sixteen channels at byte `r8` of the pixel: loads, the
/// steps, the store; `masked` for the last, partial one.
fn body(
    asm: &mut CodeAssembler,
    steps: &[Step<'_>],
    reaches: &[Reach],
    plan: &Plan,
    constant_base: usize,
    masked: bool,
) -> Result<(), IcedError> {
    let load = |asm: &mut CodeAssembler, register: AsmRegisterZmm, base: AsmRegister64| match masked
    {
        true => asm.vmovups(register.k1().z(), ptr(base + r8)),
        false => asm.vmovups(register, ptr(base + r8)),
    };
    load(asm, zmm0, rdi)?;
    for (index, reach) in reaches.iter().enumerate() {
        if *reach != Reach::One {
            load(asm, ZMM[1 + index], POINTERS[index])?;
        }
    }
    let mut lowering = Lowering {
        constants: &plan.constants,
        constant_base,
        next: constant_base + plan.constants.len(),
    };
    let inputs: Vec<AsmRegisterZmm> = (0..=reaches.len()).map(|index| ZMM[index]).collect();
    let mut results: Vec<AsmRegisterZmm> = Vec::with_capacity(steps.len());
    for step in steps {
        let operands: Vec<AsmRegisterZmm> = step
            .inputs
            .iter()
            .map(|input| match *input {
                StepInput::Input(index) => inputs[index],
                StepInput::Step(index) => results[index],
            })
            .collect();
        let result = lowering.lower(asm, step.expr, &operands)?;
        results.push(result);
    }
    let last = results.last().copied().unwrap_or(zmm0);
    match masked {
        true => asm.vmovups(ptr(rdi + r8).k1(), last),
        false => asm.vmovups(ptr(rdi + r8), last),
    }
}
