//! An AVX2/FMA GEMM microkernel, emitted as x86-64 machine code with
//! iced-x86 and defined into the same Cranelift module as the kernels that
//! call it (so JIT and object files share it). Cranelift's vectors are 128
//! bits wide; this uses the CPU's 256-bit registers where it has them.
//!
//! `gemm_4x16(a, b, c, k, a_row, bc_row, bias, bounds)` (System V
//! arguments, the last two on the stack): writes the 4x16 f32 tile
//! `C = clamp(A @ B + bias[r], bounds[0], bounds[1])` where `A[r, k]` is at
//! `a + r * a_row + 4 * k`, `B[k, j]` at `b + k * bc_row + 4 * j` and
//! `C[r, j]` at `c + r * bc_row + 4 * j` (byte strides), `bias` points at
//! one f32 per row and `bounds` at two f32 (use 0 and ±inf for none). NaN
//! results stay NaN through the clamp. Eight ymm accumulators, two loads of B
//! and four broadcasts of A per step of K.

use iced_x86::IcedError;
use iced_x86::code_asm::{
    AsmRegister64, AsmRegisterYmm, CodeAssembler, dword_ptr, ptr, qword_ptr, r8, r9, r10, r11, rax,
    rcx, rdi, rdx, rsi, rsp, ymm0, ymm1, ymm2, ymm3, ymm4, ymm5, ymm6, ymm7, ymm8, ymm9, ymm10,
    ymm11, ymm12,
};

/// Rows of the tile the microkernel computes (its columns: four f32x4 vectors).
pub(crate) const ROWS: usize = 4;

/// The machine code of `gemm_4x16`; position independent.
pub(crate) fn gemm_4x16() -> Result<Vec<u8>, IcedError> {
    let mut asm = CodeAssembler::new(64)?;
    let accumulators: [AsmRegisterYmm; 8] = [ymm0, ymm1, ymm2, ymm3, ymm4, ymm5, ymm6, ymm7];
    // Row pointers of A: rdi, rax, r10, r11.
    asm.lea(rax, ptr(rdi + r8))?;
    asm.lea(r10, ptr(rdi + r8 * 2))?;
    asm.lea(r11, ptr(rax + r8 * 2))?;
    let rows: [AsmRegister64; ROWS] = [rdi, rax, r10, r11];
    for accumulator in accumulators {
        asm.vxorps(accumulator, accumulator, accumulator)?;
    }
    let mut step = asm.create_label();
    let mut store = asm.create_label();
    asm.test(rcx, rcx)?;
    asm.jle(store)?;
    asm.set_label(&mut step)?;
    asm.vmovups(ymm8, ptr(rsi))?;
    asm.vmovups(ymm9, ptr(rsi + 32))?;
    for (row, &pointer) in rows.iter().enumerate() {
        asm.vbroadcastss(ymm10, dword_ptr(pointer))?;
        asm.vfmadd231ps(accumulators[2 * row], ymm10, ymm8)?;
        asm.vfmadd231ps(accumulators[2 * row + 1], ymm10, ymm9)?;
        asm.add(pointer, 4)?;
    }
    asm.add(rsi, r9)?;
    asm.dec(rcx)?;
    asm.jnz(step)?;
    asm.set_label(&mut store)?;
    // The stack arguments: bias rows and clamp bounds.
    asm.mov(rax, qword_ptr(rsp + 8))?;
    asm.mov(r10, qword_ptr(rsp + 16))?;
    asm.vbroadcastss(ymm11, dword_ptr(r10))?;
    asm.vbroadcastss(ymm12, dword_ptr(r10 + 4))?;
    for row in 0..ROWS {
        asm.vbroadcastss(ymm10, dword_ptr(rax + 4 * row as i32))?;
        for accumulator in [accumulators[2 * row], accumulators[2 * row + 1]] {
            asm.vaddps(accumulator, accumulator, ymm10)?;
            // max(bound, x) and min(bound, x) return x when x is NaN.
            asm.vmaxps(accumulator, ymm11, accumulator)?;
            asm.vminps(accumulator, ymm12, accumulator)?;
        }
    }
    for row in 0..ROWS {
        asm.vmovups(ptr(rdx), accumulators[2 * row])?;
        asm.vmovups(ptr(rdx + 32), accumulators[2 * row + 1])?;
        asm.add(rdx, r9)?;
    }
    // Leave the upper halves clean for SSE code that follows.
    asm.vzeroupper()?;
    asm.ret()?;
    asm.assemble(0)
}
