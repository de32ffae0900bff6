//! GEMM microkernels for x86-64, emitted as machine code with iced-x86 and
//! defined into the same Cranelift module as the kernels that call them (so
//! JIT and object files share them). Cranelift's vectors are 128 bits wide;
//! these use the CPU's 256-bit (AVX2) or 512-bit (AVX-512) registers.
//!
//! Each computes one tile of four rows, two registers wide (16 columns with
//! AVX2, 32 with AVX-512): `gemm(a, b, c, k, a_row, bc_row, bias, bounds)`
//! (System V arguments, the last two on the stack) writes
//! `C = clamp(A @ B + bias[r], bounds[0], bounds[1])` where `A[r, k]` is at
//! `a + r * a_row + 4 * k`, `B[k, j]` at `b + k * bc_row + 4 * j` and
//! `C[r, j]` at `c + r * bc_row + 4 * j` (byte strides), `bias` points at one
//! f32 per row and `bounds` at two f32 (use 0 and ±inf for none). NaN results
//! stay NaN through the clamp. Eight accumulators, two loads of B and four
//! broadcasts of A per step of K.

use iced_x86::IcedError;
use iced_x86::code_asm::{
    AsmRegister64, CodeAssembler, dword_ptr, ptr, qword_ptr, r8, r9, r10, r11, rax, rcx, rdi, rdx,
    rsi, rsp,
};

/// Rows of the tiles the microkernels compute.
pub(crate) const ROWS: usize = 4;

/// The vector width a microkernel uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Width {
    /// 256-bit ymm registers: 16 columns a tile.
    Avx2,
    /// 512-bit zmm registers: 32 columns a tile.
    Avx512,
}

impl Width {
    /// Columns of a tile: two registers of f32.
    pub(crate) fn columns(self) -> usize {
        match self {
            Width::Avx2 => 16,
            Width::Avx512 => 32,
        }
    }
}

/// Emits the body of a microkernel with the vector registers given.
macro_rules! emit_gemm_tile {
    ($asm:ident, $bytes:expr, [$($accumulator:ident),*], $b0:ident, $b1:ident, $a:ident, $low:ident, $high:ident) => {{
        use iced_x86::code_asm::{$($accumulator,)* $b0, $b1, $a, $low, $high};
        let accumulators = [$($accumulator),*];
        // Row pointers of A: rdi, rax, r10, r11.
        $asm.lea(rax, ptr(rdi + r8))?;
        $asm.lea(r10, ptr(rdi + r8 * 2))?;
        $asm.lea(r11, ptr(rax + r8 * 2))?;
        let rows: [AsmRegister64; ROWS] = [rdi, rax, r10, r11];
        for accumulator in accumulators {
            $asm.vxorps(accumulator, accumulator, accumulator)?;
        }
        let mut step = $asm.create_label();
        let mut store = $asm.create_label();
        $asm.test(rcx, rcx)?;
        $asm.jle(store)?;
        $asm.set_label(&mut step)?;
        $asm.vmovups($b0, ptr(rsi))?;
        $asm.vmovups($b1, ptr(rsi + $bytes))?;
        for (row, &pointer) in rows.iter().enumerate() {
            $asm.vbroadcastss($a, dword_ptr(pointer))?;
            $asm.vfmadd231ps(accumulators[2 * row], $a, $b0)?;
            $asm.vfmadd231ps(accumulators[2 * row + 1], $a, $b1)?;
            $asm.add(pointer, 4)?;
        }
        $asm.add(rsi, r9)?;
        $asm.dec(rcx)?;
        $asm.jnz(step)?;
        $asm.set_label(&mut store)?;
        // The stack arguments: bias rows and clamp bounds.
        $asm.mov(rax, qword_ptr(rsp + 8))?;
        $asm.mov(r10, qword_ptr(rsp + 16))?;
        $asm.vbroadcastss($low, dword_ptr(r10))?;
        $asm.vbroadcastss($high, dword_ptr(r10 + 4))?;
        for row in 0..ROWS {
            $asm.vbroadcastss($a, dword_ptr(rax + 4 * row as i32))?;
            for accumulator in [accumulators[2 * row], accumulators[2 * row + 1]] {
                $asm.vaddps(accumulator, accumulator, $a)?;
                // max(bound, x) and min(bound, x) return x when x is NaN.
                $asm.vmaxps(accumulator, $low, accumulator)?;
                $asm.vminps(accumulator, $high, accumulator)?;
            }
        }
        for row in 0..ROWS {
            $asm.vmovups(ptr(rdx), accumulators[2 * row])?;
            $asm.vmovups(ptr(rdx + $bytes), accumulators[2 * row + 1])?;
            $asm.add(rdx, r9)?;
        }
    }};
}

/// The machine code of the microkernel of `width`; position independent.
pub(crate) fn gemm_tile(width: Width) -> Result<Vec<u8>, IcedError> {
    let mut asm = CodeAssembler::new(64)?;
    match width {
        Width::Avx2 => {
            emit_gemm_tile!(
                asm,
                32,
                [ymm0, ymm1, ymm2, ymm3, ymm4, ymm5, ymm6, ymm7],
                ymm8,
                ymm9,
                ymm10,
                ymm11,
                ymm12
            )
        }
        Width::Avx512 => {
            emit_gemm_tile!(
                asm,
                64,
                [zmm0, zmm1, zmm2, zmm3, zmm4, zmm5, zmm6, zmm7],
                zmm8,
                zmm9,
                zmm10,
                zmm11,
                zmm12
            )
        }
    }
    // Leave the upper halves clean for SSE code that follows.
    asm.vzeroupper()?;
    asm.ret()?;
    asm.assemble(0)
}
