//! GEMM and convolution microkernels for x86-64, emitted as
//! machine code with iced-x86 and defined into the same Cranelift module as
//! the kernels that call them (so JIT and object files share them).
//! Cranelift's vectors are 128 bits wide; these use the CPU's 256-bit (AVX2)
//! or 512-bit (AVX-512) registers. The direct convolution kernel (depthwise
//! convolutions, and those of few input channels) is described at
//! [`direct`], the integer GEMM tiles (VNNI's `vpdpbusd`, or AVX2's
//! `vpmaddwd`) at [`integer_gemm_tile`], the activations at [`activation`].
//!
//! A GEMM tile is four to nine rows, one or two registers wide (8 or 16
//! columns with AVX2, 16 or 32 with AVX-512): `gemm(a, b, c, k, a_row, c_row,
//! row_bias, column_bias, bounds, residual, b_row)` (System V arguments,
//! the last five on the stack) writes
//! `C = clamp(A @ B + row_bias[r] + column_bias[j], bounds[0], bounds[1]) + R`
//! where, with byte strides, `A[r, k]` is at `a + r * a_row + 4 * k`,
//! `B[k, j]` at `b + k * b_row + 4 * j`, `C[r, j]` at `c + r * c_row + 4 * j`
//! and `R[r, j]` at `residual + r * c_row + 4 * j` (a null `residual` adds
//! nothing). B's rows may be a prepacked panel's (`b_row` one tile's width)
//! or a whole matrix's. `row_bias` points at one f32 per row, `column_bias` at one per
//! column and `bounds` at two f32: a bias the GEMM does not have is -0.0,
//! which leaves every sum as it is, and bounds it does not have are ±inf.
//! The sums are added in that order, so a tile rounds as the kernels that
//! apply the epilogue themselves do. NaN results stay NaN through the clamp.
//! Per step of K: two loads of B, and for each row one broadcast of A and
//! two multiply-adds. Rows of A are addressed from three pointers, each
//! followed by the next two rows at one and two row strides, so no tile
//! needs a callee-saved register.

use iced_x86::IcedError;
use iced_x86::code_asm::{
    AsmMemoryOperand, AsmRegister64, CodeAssembler, byte_ptr, dword_bcst, dword_ptr, ptr,
    qword_ptr, r8, r9, r10, r11, rax, rcx, rdi, rdx, rsi, rsp,
};

/// The most rows a microkernel computes (the length of the bias rows a
/// caller must provide).
pub(crate) const MAX_ROWS: usize = 9;

/// The most columns a microkernel computes (the length of the column bias
/// a caller must provide).
pub(crate) const MAX_COLUMNS: usize = 32;

/// The vector width a microkernel uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Width {
    /// 256-bit ymm registers: 8 columns a register.
    Avx2,
    /// 512-bit zmm registers: 16 columns a register.
    Avx512,
}

impl Width {
    /// Columns of one register of f32.
    fn register_columns(self) -> usize {
        match self {
            Width::Avx2 => 8,
            Width::Avx512 => 16,
        }
    }
}

/// A microkernel: its vector width, how many rows it computes and how many
/// registers wide a row is (two, or one for the columns left over by the
/// wider tiles).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tile {
    pub width: Width,
    pub rows: usize,
    pub registers: usize,
}

impl Tile {
    /// The tiles a CPU with these widths runs, widest and tallest first:
    /// for each width, the tall tiles and four rows two registers wide,
    /// then eight and four rows one register wide, then single rows (a
    /// matrix-vector product's, a remainder's) two and one register wide;
    /// a tile as wide as one
    /// of a wider vector width is left out. AVX-512's nine rows (its row
    /// pointers' most) cover a GEMM of nine rows, a 3x3 image's pixels, in
    /// one pass over B, not two.
    pub(crate) fn for_widths(widths: &[Width]) -> Vec<Tile> {
        let mut tiles: Vec<Tile> = Vec::new();
        for &width in widths {
            let tall: &[usize] = match width {
                Width::Avx512 => &[9, 8],
                // 6 rows of 2 registers, plus B's two and A's one: 15 of
                // the 16 ymm registers.
                Width::Avx2 => &[6],
            };
            let shapes = tall.iter().map(|&rows| (rows, 2));
            for (rows, registers) in shapes.chain([(4, 2), (8, 1), (4, 1), (1, 2), (1, 1)]) {
                let tile = Tile {
                    width,
                    rows,
                    registers,
                };
                let wider =
                    |other: &Tile| other.width != width && other.columns() == tile.columns();
                if !tiles.iter().any(wider) {
                    tiles.push(tile);
                }
            }
        }
        tiles
    }

    pub(crate) fn columns(self) -> usize {
        self.width.register_columns() * self.registers
    }
}

/// Row `row` of A: one of three row pointers, plus zero, one or two row
/// strides (`r8`).
fn a_row(row: usize) -> AsmMemoryOperand {
    let base: AsmRegister64 = [rdi, rax, r10][row / 3];
    match row % 3 {
        0 => ptr(base),
        1 => ptr(base + r8),
        _ => ptr(base + r8 * 2),
    }
}

/// Emits the body of the microkernel `$tile` with the vector registers
/// given: accumulators (the first `registers` of them a row), two for B
/// (which then hold the clamp bounds) and one for A; `$bytes` is one
/// register's size.
macro_rules! emit_gemm_tile {
    ($asm:ident, $tile:expr, $bytes:expr, $accumulators:expr, [$b0:expr, $b1:expr], $a:expr) => {{
        let tile: Tile = $tile;
        let (rows, registers) = (tile.rows, tile.registers);
        let accumulators = &$accumulators[..rows * registers];
        let b_registers = &[$b0, $b1][..registers];
        let a_register = $a;
        // The row pointers: rdi, rax = rdi + 3 rows, r10 = rax + 3 rows.
        let pointers = &[rdi, rax, r10][..rows.div_ceil(3)];
        for pair in pointers.windows(2) {
            $asm.lea(pair[1], ptr(pair[0] + r8 * 2))?;
            $asm.add(pair[1], r8)?;
        }
        for &accumulator in accumulators {
            $asm.vxorps(accumulator, accumulator, accumulator)?;
        }
        // B's row stride, the last stack argument.
        $asm.mov(r11, qword_ptr(rsp + 40))?;
        let mut step = $asm.create_label();
        let mut store = $asm.create_label();
        $asm.test(rcx, rcx)?;
        $asm.jle(store)?;
        $asm.set_label(&mut step)?;
        // B's row eight steps ahead, into the L1 cache: a prepacked panel
        // streams from memory faster than the prefetchers alone bring it.
        for half in 0..b_registers.len() {
            $asm.prefetcht0(byte_ptr(rsi + r11 * 8 + $bytes * half as i32))?;
        }
        for (half, &register) in b_registers.iter().enumerate() {
            $asm.vmovups(register, ptr(rsi + $bytes * half as i32))?;
        }
        for row in 0..rows {
            let row_accumulators = &accumulators[registers * row..registers * (row + 1)];
            // One broadcast a row, into a register: folded into each of
            // the row's multiply-adds (AVX-512's embedded broadcast), A's
            // element was loaded twice, and the 9x32 tile's products of a
            // linear layer took 13% longer (Sapphire Rapids).
            $asm.vbroadcastss(a_register, dword_ptr(a_row(row)))?;
            for (&accumulator, &register) in row_accumulators.iter().zip(b_registers) {
                $asm.vfmadd231ps(accumulator, a_register, register)?;
            }
        }
        for &pointer in pointers {
            $asm.add(pointer, 4)?;
        }
        $asm.add(rsi, r11)?;
        $asm.dec(rcx)?;
        $asm.jnz(step)?;
        $asm.set_label(&mut store)?;
        // The stack arguments: the biases, the clamp bounds and the
        // residual (B's registers are free now and hold the bounds).
        let (low, high) = ($b0, $b1);
        $asm.mov(rax, qword_ptr(rsp + 8))?;
        $asm.mov(r11, qword_ptr(rsp + 16))?;
        $asm.mov(r10, qword_ptr(rsp + 24))?;
        $asm.vbroadcastss(low, dword_ptr(r10))?;
        $asm.vbroadcastss(high, dword_ptr(r10 + 4))?;
        for row in 0..rows {
            $asm.vbroadcastss(a_register, dword_ptr(rax + 4 * row as i32))?;
            let row_accumulators = &accumulators[registers * row..registers * (row + 1)];
            for (half, &accumulator) in row_accumulators.iter().enumerate() {
                $asm.vaddps(accumulator, accumulator, a_register)?;
                $asm.vaddps(accumulator, accumulator, ptr(r11 + $bytes * half as i32))?;
                // max(bound, x) and min(bound, x) return x when x is NaN.
                $asm.vmaxps(accumulator, low, accumulator)?;
                $asm.vminps(accumulator, high, accumulator)?;
            }
        }
        let mut plain = $asm.create_label();
        let mut done = $asm.create_label();
        $asm.mov(r10, qword_ptr(rsp + 32))?;
        $asm.test(r10, r10)?;
        $asm.jz(plain)?;
        for row in accumulators.chunks(registers) {
            for (half, &accumulator) in row.iter().enumerate() {
                $asm.vaddps(accumulator, accumulator, ptr(r10 + $bytes * half as i32))?;
                $asm.vmovups(ptr(rdx + $bytes * half as i32), accumulator)?;
            }
            $asm.add(rdx, r9)?;
            $asm.add(r10, r9)?;
        }
        $asm.jmp(done)?;
        $asm.set_label(&mut plain)?;
        for row in accumulators.chunks(registers) {
            for (half, &accumulator) in row.iter().enumerate() {
                $asm.vmovups(ptr(rdx + $bytes * half as i32), accumulator)?;
            }
            $asm.add(rdx, r9)?;
        }
        $asm.set_label(&mut done)?;
    }};
}

/// The machine code of a microkernel; position independent.
pub(crate) fn gemm_tile(tile: Tile) -> Result<Vec<u8>, IcedError> {
    use iced_x86::code_asm::registers::{ymm::*, zmm::*};
    let mut asm = CodeAssembler::new(64)?;
    match tile.width {
        Width::Avx2 => emit_gemm_tile!(
            asm,
            tile,
            32,
            [
                ymm0, ymm1, ymm2, ymm3, ymm4, ymm5, ymm6, ymm7, ymm8, ymm9, ymm10, ymm11
            ],
            [ymm12, ymm13],
            ymm14
        ),
        Width::Avx512 => emit_gemm_tile!(
            asm,
            tile,
            64,
            [
                zmm0, zmm1, zmm2, zmm3, zmm4, zmm5, zmm6, zmm7, zmm8, zmm9, zmm10, zmm11, zmm12,
                zmm13, zmm14, zmm15, zmm16, zmm17
            ],
            [zmm18, zmm19],
            zmm20
        ),
    }
    // Leave the upper halves clean for SSE code that follows.
    asm.vzeroupper()?;
    asm.ret()?;
    asm.assemble(0)
}

/// Emits the channel blocks of `$pixels` output pixels of the direct
/// convolution microkernel: `$sums` (one register a pixel), `$weight` for the
/// filter, `$low` and `$high` holding the bounds; `$bytes` is one register's
/// size. `$masked` (AVX-512) masks the last block with k1 (BMI2's bzhi makes
/// the mask); otherwise the caller gives whole registers of channels. With
/// `$reads` [`WindowReads::Broadcast`] each tap's element is broadcast, by
/// the multiply-add itself with `$staging` `None` (AVX-512's embedded
/// broadcast), or into that register first.
macro_rules! emit_direct_pixels {
    ($asm:ident, $pixels:expr, $reads:expr, $bytes:expr, $masked:expr, $register:ty, $sums:expr, $weight:expr, $staging:expr, [$low:expr, $high:expr]) => {{
        use iced_x86::code_asm::registers::gpr32::{eax, ebx};
        use iced_x86::code_asm::registers::gpr64::{r12, r13, r14, r15, rbp, rbx};
        use iced_x86::code_asm::registers::k::k1;
        let pixels: usize = $pixels;
        let sums = &$sums[..pixels];
        let reads: WindowReads = $reads;
        let staging: Option<$register> = $staging;
        // Pixels 0-3 from rax, 4-7 from rbx (once the weights are loaded).
        let window = |pixel: usize| {
            let base = [rax, rbx][pixel / 4];
            match pixel % 4 {
                0 => base + 0,
                1 => base + r11,
                2 => base + r11 * 2,
                _ => base + rbp,
            }
        };
        let mut channels = $asm.create_label();
        let mut zero = $asm.create_label();
        let mut taps = $asm.create_label();
        let mut tap = $asm.create_label();
        let mut store = $asm.create_label();
        $asm.xor(r13, r13)?;
        $asm.set_label(&mut channels)?;
        if $masked {
            // k1: the channels left, at most a register's.
            $asm.mov(rax, r12)?;
            $asm.sub(rax, r13)?;
            $asm.shr(rax, 2)?;
            $asm.mov(ebx, $bytes / 4)?;
            $asm.cmp(rax, rbx)?;
            $asm.cmova(rax, rbx)?;
            $asm.mov(ebx, 0xFFFF)?;
            $asm.bzhi(ebx, ebx, eax)?;
            $asm.kmovw(k1, ebx)?;
        }
        let masked = |register: $register| if $masked { register.k1() } else { register };
        let zeroing = |register: $register| if $masked { register.k1().z() } else { register };
        $asm.test(rcx, rcx)?;
        $asm.jz(zero)?;
        $asm.vmovups(zeroing(sums[0]), ptr(rcx + r13))?;
        for &sum in &sums[1..] {
            $asm.vmovaps(sum, sums[0])?;
        }
        $asm.jmp(taps)?;
        $asm.set_label(&mut zero)?;
        for &sum in sums {
            $asm.vxorps(sum, sum, sum)?;
        }
        $asm.set_label(&mut taps)?;
        $asm.mov(r14, r8)?;
        $asm.mov(r15, r9)?;
        $asm.test(r15, r15)?;
        $asm.jz(store)?;
        $asm.set_label(&mut tap)?;
        $asm.mov(rax, qword_ptr(r14))?;
        $asm.add(rax, rdi)?;
        if reads == WindowReads::Channels {
            $asm.add(rax, r13)?;
        }
        $asm.mov(rbx, qword_ptr(r14 + 8))?;
        $asm.add(rbx, rsi)?;
        $asm.vmovups(zeroing($weight), ptr(rbx + r13))?;
        if pixels > 4 {
            $asm.lea(rbx, ptr(rax + r11 * 4))?;
        }
        for (pixel, &sum) in sums.iter().enumerate() {
            match (reads, staging) {
                (WindowReads::Channels, _) => {
                    $asm.vfmadd231ps(masked(sum), $weight, ptr(window(pixel)))?
                }
                (WindowReads::Broadcast, None) => {
                    $asm.vfmadd231ps(masked(sum), $weight, dword_bcst(window(pixel)))?
                }
                (WindowReads::Broadcast, Some(element)) => {
                    $asm.vbroadcastss(element, dword_ptr(window(pixel)))?;
                    $asm.vfmadd231ps(masked(sum), $weight, element)?;
                }
            }
        }
        $asm.add(r14, 16)?;
        $asm.dec(r15)?;
        $asm.jnz(tap)?;
        $asm.set_label(&mut store)?;
        $asm.lea(rax, ptr(rdx + r13))?;
        for &sum in sums {
            // max(bound, x) and min(bound, x) return x when x is NaN.
            $asm.vmaxps(sum, $low, sum)?;
            $asm.vminps(sum, $high, sum)?;
            if $masked {
                $asm.vmovups(ptr(rax).k1(), sum)?;
            } else {
                $asm.vmovups(ptr(rax), sum)?;
            }
            $asm.add(rax, r12)?;
        }
        $asm.add(r13, $bytes)?;
        $asm.cmp(r13, r12)?;
        $asm.jb(channels)?;
    }};
}

/// How the direct convolution microkernel reads a tap of a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WindowReads {
    /// A depthwise convolution's: the tap's channels, one vector of them a
    /// block (a channels-last window).
    Channels,
    /// A convolution of few input channels: each tap is one input channel's
    /// element (any layout), broadcast to every output channel.
    Broadcast,
}

/// The direct convolution microkernel: `direct(window, filter, output, bias,
/// taps, tap_count, pixels, pixel_step, channel_bytes, bounds)` (System V
/// arguments, the last four on the stack) computes `pixels` output pixels
/// of a channels-last convolution that read the same taps, every output
/// channel of each. With [`WindowReads::Channels`] (depthwise)
/// `output[p][c] = clamp(bias[c] + sum over taps t of window[p][t][c] *
/// filter[t][c], bounds[0], bounds[1])`; with [`WindowReads::Broadcast`]
/// the window's element is the same for every channel, `window[p][t]`.
/// Pixel `p`'s window starts at `window + p * pixel_step`, its output at
/// `output + p * channel_bytes`, and `taps` holds `tap_count` pairs of i64
/// byte offsets: the tap's element from the window's start and its filter
/// row from `filter`. A null `bias` starts the sums at zero. Each channel is
/// summed bias first, then the taps in the table's order, with fused
/// multiply-adds, so it gives the bits of the kernels Cranelift emits.
/// Eight pixels at a time, then four, then one; a register of channels at a
/// time: with AVX-512 (and BMI2) sixteen, the last block masked; with AVX2
/// eight, and `channel_bytes` must be a multiple of 32.
pub(crate) fn direct(width: Width, reads: WindowReads) -> Result<Vec<u8>, IcedError> {
    use iced_x86::code_asm::registers::gpr64::{r12, r13, r14, r15, rbp, rbx};
    use iced_x86::code_asm::registers::{ymm::*, zmm::*};
    let mut asm = CodeAssembler::new(64)?;
    let saved = [rbx, rbp, r12, r13, r14, r15];
    for register in saved {
        asm.push(register)?;
    }
    // The stack arguments, past the saved registers and the return address.
    let argument = |index: i32| qword_ptr(rsp + 8 * (saved.len() as i32 + 1 + index));
    asm.mov(r10, argument(0))?;
    asm.mov(r11, argument(1))?;
    asm.mov(r12, argument(2))?;
    asm.mov(rax, argument(3))?;
    match width {
        Width::Avx2 => {
            asm.vbroadcastss(ymm14, dword_ptr(rax))?;
            asm.vbroadcastss(ymm15, dword_ptr(rax + 4))?;
        }
        Width::Avx512 => {
            asm.vbroadcastss(zmm30, dword_ptr(rax))?;
            asm.vbroadcastss(zmm31, dword_ptr(rax + 4))?;
        }
    }
    asm.lea(rbp, ptr(r11 + r11 * 2))?;
    let pixels = |asm: &mut CodeAssembler, pixels: usize| -> Result<(), IcedError> {
        match width {
            Width::Avx2 => emit_direct_pixels!(
                asm,
                pixels,
                reads,
                32,
                false,
                iced_x86::code_asm::AsmRegisterYmm,
                [ymm0, ymm1, ymm2, ymm3, ymm4, ymm5, ymm6, ymm7],
                ymm8,
                Some(ymm9),
                [ymm14, ymm15]
            ),
            Width::Avx512 => emit_direct_pixels!(
                asm,
                pixels,
                reads,
                64,
                true,
                iced_x86::code_asm::AsmRegisterZmm,
                [zmm0, zmm1, zmm2, zmm3, zmm4, zmm5, zmm6, zmm7],
                zmm8,
                None,
                [zmm30, zmm31]
            ),
        }
        Ok(())
    };
    // Eight pixels at a time (eight chains of multiply-adds, which their
    // latency needs), then four, then the rest one by one.
    let [eights, fours, mut ones] = [(); 3].map(|()| asm.create_label());
    let mut one = asm.create_label();
    let mut end = asm.create_label();
    for (group, mut start, next) in [(8, eights, fours), (4, fours, ones)] {
        asm.set_label(&mut start)?;
        asm.cmp(r10, group)?;
        asm.jl(next)?;
        pixels(&mut asm, group as usize)?;
        asm.lea(rdi, ptr(rdi + r11 * group))?;
        asm.lea(rdx, ptr(rdx + r12 * group))?;
        asm.sub(r10, group)?;
        asm.jmp(start)?;
    }
    asm.set_label(&mut ones)?;
    asm.test(r10, r10)?;
    asm.jz(end)?;
    asm.set_label(&mut one)?;
    pixels(&mut asm, 1)?;
    asm.add(rdi, r11)?;
    asm.add(rdx, r12)?;
    asm.dec(r10)?;
    asm.jnz(one)?;
    asm.set_label(&mut end)?;
    for register in saved.into_iter().rev() {
        asm.pop(register)?;
    }
    asm.vzeroupper()?;
    asm.ret()?;
    asm.assemble(0)
}

/// An activation the [`activation`] microkernel computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Activation {
    /// `1 / (1 + exp(-x))`.
    Sigmoid,
    /// `x * sigmoid(x)`.
    Silu,
    /// `exp(x - shift)`, with `shift` an f32 fourth argument (in `xmm0`):
    /// a softmax's exponentials.
    ShiftedExp,
    /// `x/2 * (1 + erf(x / sqrt 2))`, erf as [`crate::kernels::erf_tanh`]
    /// computes it.
    Gelu,
    /// GELU's tanh form, tanh as [`crate::kernels::erf_tanh`] computes it.
    GeluTanh,
}

impl Activation {
    pub(crate) const ALL: [Activation; 5] = [
        Activation::Sigmoid,
        Activation::Silu,
        Activation::ShiftedExp,
        Activation::Gelu,
        Activation::GeluTanh,
    ];
}

/// The constants the [`activation`] microkernel reads: the exponential's
/// ([`crate::kernels::exp`]), and the lane numbers for the AVX2 tail's mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ActivationConstant {
    Lowest,
    Highest,
    Log2E,
    Shift,
    ShiftBits,
    Ln2High,
    Ln2Low,
    Taylor(usize),
    One,
    ExponentBias,
    SignBit,
    Lanes,
    // GELU's.
    AbsMask,
    Half,
    Two,
    FracOneSqrt2,
    GeluCubic,
    SqrtTwoOverPi,
    ErfSmall(usize),
    ErfcScaled(usize),
    ErfSplit,
    ErfOne,
    TanhSmall(usize),
    TanhSplit,
}

impl ActivationConstant {
    fn all() -> Vec<ActivationConstant> {
        use crate::kernels::{erf_tanh, exp};
        use ActivationConstant::*;
        let taylor = (0..exp::TAYLOR.len()).map(Taylor);
        let erf_small = (0..erf_tanh::ERF_SMALL.len()).map(ErfSmall);
        let erfc_scaled = (0..erf_tanh::ERFC_SCALED.len()).map(ErfcScaled);
        let tanh_small = (0..erf_tanh::TANH_SMALL.len()).map(TanhSmall);
        [Lowest, Highest, Log2E, Shift, ShiftBits, Ln2High, Ln2Low]
            .into_iter()
            .chain(taylor)
            .chain([One, ExponentBias, SignBit, Lanes, AbsMask, Half, Two])
            .chain([FracOneSqrt2, GeluCubic, SqrtTwoOverPi])
            .chain(erf_small)
            .chain(erfc_scaled)
            .chain([ErfSplit, ErfOne])
            .chain(tanh_small)
            .chain([TanhSplit])
            .collect()
    }

    /// A 512-bit register's worth of the constant (AVX2 reads half). The
    /// IR's f64 constants are rounded to f32, as the kernels' are.
    fn data(self) -> [u32; 16] {
        use crate::kernels::{erf_tanh, exp};
        use ptec_ir::ops::elementwise::{GELU_CUBIC, SQRT_2_OVER_PI};
        let splat = |bits: u32| [bits; 16];
        let real = |value: f64| splat((value as f32).to_bits());
        match self {
            ActivationConstant::Lowest => splat(exp::LOWEST.to_bits()),
            ActivationConstant::Highest => splat(exp::HIGHEST.to_bits()),
            ActivationConstant::Log2E => splat(exp::LOG2_E.to_bits()),
            ActivationConstant::Shift | ActivationConstant::ShiftBits => {
                splat(exp::ROUNDING_SHIFT.to_bits())
            }
            ActivationConstant::Ln2High => splat(exp::LN2_HIGH.to_bits()),
            ActivationConstant::Ln2Low => splat(exp::LN2_LOW.to_bits()),
            ActivationConstant::Taylor(index) => splat(exp::TAYLOR[index].to_bits()),
            ActivationConstant::One => splat(1f32.to_bits()),
            ActivationConstant::ExponentBias => splat(exp::EXPONENT_BIAS as u32),
            ActivationConstant::SignBit => splat(0x8000_0000),
            ActivationConstant::Lanes => std::array::from_fn(|lane| lane as u32),
            ActivationConstant::AbsMask => splat(0x7FFF_FFFF),
            ActivationConstant::Half => real(0.5),
            ActivationConstant::Two => real(2.0),
            ActivationConstant::FracOneSqrt2 => real(std::f64::consts::FRAC_1_SQRT_2),
            ActivationConstant::GeluCubic => real(GELU_CUBIC),
            ActivationConstant::SqrtTwoOverPi => real(SQRT_2_OVER_PI),
            ActivationConstant::ErfSmall(index) => splat(erf_tanh::ERF_SMALL[index].to_bits()),
            ActivationConstant::ErfcScaled(index) => splat(erf_tanh::ERFC_SCALED[index].to_bits()),
            ActivationConstant::ErfSplit => real(erf_tanh::ERF_SPLIT),
            ActivationConstant::ErfOne => real(erf_tanh::ERF_ONE),
            ActivationConstant::TanhSmall(index) => splat(erf_tanh::TANH_SMALL[index].to_bits()),
            ActivationConstant::TanhSplit => real(erf_tanh::TANH_SPLIT),
        }
    }
}

/// Emits `$u = exp($y)` by the steps of `kernels::exp`, in order, through
/// `$k` and `$t` (`$y` is lost). `$vanishing` marks the lanes whose
/// exponential rounds to 0 and `$zero_vanished` zeroes them in a register.
macro_rules! emit_exponential {
    ($asm:ident, [$y:expr, $k:expr, $t:expr, $u:expr], $constant:expr, $vanishing:expr, $zero_vanished:expr) => {{
        use ActivationConstant::*;
        let constant = $constant;
        $vanishing(&mut $asm, $y, constant(Lowest))?;
        $zero_vanished(&mut $asm, $y)?;
        // min(bound, y) is y when y is NaN, as `at_most` keeps it.
        $asm.vmovups($t, constant(Highest))?;
        $asm.vminps($y, $t, $y)?;
        // k = round(y log2 e), as a float (t) and an integer (k).
        $asm.vmulps($k, $y, constant(Log2E))?;
        $asm.vaddps($k, $k, constant(Shift))?;
        $asm.vsubps($t, $k, constant(Shift))?;
        $asm.vpsubd($k, $k, constant(ShiftBits))?;
        // r = y - t ln2_high - t ln2_low.
        $asm.vmulps($u, $t, constant(Ln2High))?;
        $asm.vsubps($y, $y, $u)?;
        $asm.vmulps($u, $t, constant(Ln2Low))?;
        $asm.vsubps($y, $y, $u)?;
        // p = 1 + (r + r^2 q(r)), q by Horner's rule.
        $asm.vmovups($u, constant(Taylor(0)))?;
        for index in 1..crate::kernels::exp::TAYLOR.len() {
            $asm.vmulps($u, $u, $y)?;
            $asm.vaddps($u, $u, constant(Taylor(index)))?;
        }
        $asm.vmulps($t, $y, $y)?;
        $asm.vmulps($u, $u, $t)?;
        $asm.vaddps($u, $u, $y)?;
        $asm.vaddps($u, $u, constant(One))?;
        // p * 2^(k >> 1) * 2^(k - (k >> 1)).
        $asm.vpsrad($t, $k, 1)?;
        $asm.vpsubd($k, $k, $t)?;
        $asm.vpaddd($t, $t, constant(ExponentBias))?;
        $asm.vpslld($t, $t, 23)?;
        $asm.vpaddd($k, $k, constant(ExponentBias))?;
        $asm.vpslld($k, $k, 23)?;
        $asm.vmulps($u, $u, $t)?;
        $asm.vmulps($u, $u, $k)?;
        $zero_vanished(&mut $asm, $u)?;
    }};
}

/// Emits `$sum` = the polynomial of `$coefficient(i)` (`$count` of them,
/// lowest power first) at `$x`, by Horner's rule as `erf_tanh::polynomial`
/// computes it.
macro_rules! emit_polynomial {
    ($asm:ident, $sum:expr, $x:expr, $count:expr, $coefficient:expr) => {{
        $asm.vmovups($sum, $coefficient($count - 1))?;
        for index in (0..$count - 1).rev() {
            $asm.vmulps($sum, $sum, $x)?;
            $asm.vaddps($sum, $sum, $coefficient(index))?;
        }
    }};
}

/// Emits the activation loop: the first list holds seven vector registers
/// (the last holding the shift of a shifted exponential), the second four
/// more (GELU's),
/// `$lanes` f32 a register, `$constant(c)` the memory operand of a
/// register's worth of constant `c`. `$load` and `$store` move a register
/// from and to memory masked to the `rdx` elements left when fewer than
/// `$lanes` remain (`$mask` prepares that). `$vanishing` and
/// `$zero_vanished` are [`emit_exponential`]'s; `$select(dst, src, m,
/// bound, predicate)` moves `src` into `dst` in the lanes where `m`
/// compares to `bound` by `predicate` (`vcmpps`'s). The steps are those of
/// `kernels::exp`, `kernels::erf_tanh` and the IR's expressions, in order.
macro_rules! emit_activation {
    ($asm:ident, $activation:expr, $lanes:expr, [$x:expr, $y:expr, $k:expr, $t:expr, $u:expr, $w:expr, $shift:expr], [$a:expr, $m:expr, $s:expr, $c:expr], $constant:expr, $mask:expr, $load:expr, $store:expr, $vanishing:expr, $zero_vanished:expr, $select:expr) => {{
        use crate::kernels::erf_tanh;
        use ActivationConstant::*;
        let constant = $constant;
        let mut full = $asm.create_label();
        let mut tail = $asm.create_label();
        let mut body = $asm.create_label();
        let mut last = $asm.create_label();
        let mut end = $asm.create_label();
        $asm.set_label(&mut full)?;
        $asm.cmp(rdx, $lanes)?;
        $asm.jl(tail)?;
        $asm.vmovups($x, ptr(rdi))?;
        $asm.jmp(body)?;
        $asm.set_label(&mut tail)?;
        $asm.test(rdx, rdx)?;
        $asm.jle(end)?;
        $mask(&mut $asm)?;
        $load(&mut $asm, $x)?;
        $asm.set_label(&mut body)?;
        match $activation {
            Activation::Sigmoid | Activation::Silu | Activation::ShiftedExp => {
                // y = -x (x - shift), the exponential's argument.
                match $activation {
                    Activation::ShiftedExp => $asm.vsubps($y, $x, $shift)?,
                    _ => $asm.vxorps($y, $x, constant(SignBit))?,
                }
                emit_exponential!($asm, [$y, $k, $t, $u], constant, $vanishing, $zero_vanished);
            }
            Activation::Gelu | Activation::GeluTanh => {
                // a: erf's argument, x / sqrt 2, or tanh's, (x + c x^3) sqrt(2/pi).
                let (small, degree, split, predicate): (fn(usize) -> ActivationConstant, _, _, _) =
                    match $activation {
                        Activation::Gelu => {
                            $asm.vmulps($a, $x, constant(FracOneSqrt2))?;
                            // Ordered `<=`.
                            (ErfSmall, erf_tanh::ERF_SMALL.len(), ErfSplit, 2)
                        }
                        _ => {
                            $asm.vmulps($a, $x, $x)?;
                            $asm.vmulps($a, $a, $x)?;
                            $asm.vmulps($a, $a, constant(GeluCubic))?;
                            $asm.vaddps($a, $x, $a)?;
                            $asm.vmulps($a, $a, constant(SqrtTwoOverPi))?;
                            // Ordered `<`.
                            (TanhSmall, erf_tanh::TANH_SMALL.len(), TanhSplit, 1)
                        }
                    };
                // m = |a|; s = a P(a^2), the first form.
                $asm.vandps($m, $a, constant(AbsMask))?;
                $asm.vmulps($s, $a, $a)?;
                emit_polynomial!($asm, $c, $s, degree, |i| constant(small(i)));
                $asm.vmulps($s, $a, $c)?;
                // u = the second form of |a|.
                if $activation == Activation::Gelu {
                    // y = min(m, 4); c = R(1/y) / y; u = 1 - exp(-y^2) c.
                    $asm.vmovups($y, constant(ErfOne))?;
                    $asm.vminps($y, $y, $m)?;
                    $asm.vmovups($t, constant(One))?;
                    $asm.vdivps($c, $t, $y)?;
                    let count = erf_tanh::ERFC_SCALED.len();
                    emit_polynomial!($asm, $u, $c, count, |i| constant(ErfcScaled(i)));
                    $asm.vmulps($c, $u, $c)?;
                    $asm.vmulps($y, $y, $y)?;
                    $asm.vxorps($y, $y, constant(SignBit))?;
                    emit_exponential!($asm, [$y, $k, $t, $u], constant, $vanishing, $zero_vanished);
                    $asm.vmulps($u, $u, $c)?;
                } else {
                    // u = 2 / (exp(2m) + 1), then 1 - u.
                    $asm.vaddps($y, $m, $m)?;
                    emit_exponential!($asm, [$y, $k, $t, $u], constant, $vanishing, $zero_vanished);
                    $asm.vaddps($u, $u, constant(One))?;
                    $asm.vmovups($t, constant(Two))?;
                    $asm.vdivps($u, $t, $u)?;
                }
                $asm.vmovups($t, constant(One))?;
                $asm.vsubps($u, $t, $u)?;
                // With a's sign; s where m compares to the split.
                $asm.vandps($t, $a, constant(SignBit))?;
                $asm.vorps($u, $u, $t)?;
                $select(&mut $asm, $u, $s, $m, constant(split), predicate)?;
            }
        }
        match $activation {
            // sigmoid = 1 / (1 + exp(-x)); silu = x * sigmoid.
            Activation::Sigmoid | Activation::Silu => {
                $asm.vaddps($u, $u, constant(One))?;
                $asm.vmovups($w, constant(One))?;
                $asm.vdivps($u, $w, $u)?;
                if $activation == Activation::Silu {
                    $asm.vmulps($u, $x, $u)?;
                }
            }
            // (x * 0.5) * (1 + erf or tanh).
            Activation::Gelu | Activation::GeluTanh => {
                $asm.vmulps($t, $x, constant(Half))?;
                $asm.vaddps($u, $u, constant(One))?;
                $asm.vmulps($u, $t, $u)?;
            }
            Activation::ShiftedExp => {}
        }
        $asm.cmp(rdx, $lanes)?;
        $asm.jl(last)?;
        $asm.vmovups(ptr(rsi), $u)?;
        $asm.add(rdi, 4 * $lanes)?;
        $asm.add(rsi, 4 * $lanes)?;
        $asm.sub(rdx, $lanes)?;
        $asm.jmp(full)?;
        $asm.set_label(&mut last)?;
        $store(&mut $asm, $u)?;
        $asm.set_label(&mut end)?;
    }};
}

/// The activation microkernel: `activation(input, output, count)` (System V
/// arguments; the shifted exponential's `shift` a fourth, in `xmm0`)
/// writes `output[i] = f(input[i])` for `i < count`, f32, with
/// AVX-512 (BMI2 making the last elements' mask) or AVX2 (masked loads and
/// stores), 16 or 8 elements at a time; `input` and `output` may be the
/// same. It computes what the Cranelift kernels compute, step for step
/// ([`crate::kernels::exp`], [`crate::kernels::erf_tanh`], no fused
/// multiply-adds), so it gives their
/// bits.
pub(crate) fn activation(width: Width, activation: Activation) -> Result<Vec<u8>, IcedError> {
    use iced_x86::code_asm::registers::gpr32::{eax, edx};
    use iced_x86::code_asm::registers::k::{k1, k2, k3};
    use iced_x86::code_asm::registers::{xmm::*, ymm::*, zmm::*};
    let mut asm = CodeAssembler::new(64)?;
    let constants = ActivationConstant::all();
    let mut labels: Vec<_> = constants.iter().map(|_| asm.create_label()).collect();
    // The constants the code reads, so that only those are emitted.
    let used = std::cell::RefCell::new(vec![false; constants.len()]);
    let label_of = |constant: ActivationConstant| {
        let index = constants
            .iter()
            .position(|&known| known == constant)
            .expect("every constant is in the table");
        used.borrow_mut()[index] = true;
        labels[index]
    };
    let constant = |c: ActivationConstant| ptr(label_of(c));
    if activation == Activation::ShiftedExp {
        match width {
            Width::Avx512 => asm.vbroadcastss(zmm6, xmm0)?,
            Width::Avx2 => asm.vbroadcastss(ymm6, xmm0)?,
        }
    }
    match width {
        Width::Avx512 => emit_activation!(
            asm,
            activation,
            16,
            [zmm0, zmm1, zmm2, zmm3, zmm4, zmm5, zmm6],
            [zmm7, zmm8, zmm9, zmm10],
            constant,
            |asm: &mut CodeAssembler| -> Result<(), IcedError> {
                asm.mov(eax, 0xFFFF)?;
                asm.bzhi(eax, eax, edx)?;
                asm.kmovw(k1, eax)
            },
            |asm: &mut CodeAssembler, x: iced_x86::code_asm::AsmRegisterZmm| {
                asm.vmovups(x.k1().z(), ptr(rdi))
            },
            |asm: &mut CodeAssembler, u: iced_x86::code_asm::AsmRegisterZmm| {
                asm.vmovups(ptr(rsi).k1(), u)
            },
            |asm: &mut CodeAssembler, y: iced_x86::code_asm::AsmRegisterZmm, lowest| {
                asm.vcmpps(k2, y, lowest, 1)
            },
            |asm: &mut CodeAssembler, v: iced_x86::code_asm::AsmRegisterZmm| asm.vxorps(
                v.k2(),
                v,
                v
            ),
            |asm: &mut CodeAssembler,
             dst: iced_x86::code_asm::AsmRegisterZmm,
             src: iced_x86::code_asm::AsmRegisterZmm,
             m,
             bound,
             predicate| {
                asm.vcmpps(k3, m, bound, predicate)?;
                asm.vmovaps(dst.k3(), src)
            }
        ),
        // ymm7: the lanes whose exponential vanishes; ymm8: the tail's;
        // ymm13: the lanes a GELU's first form takes.
        Width::Avx2 => emit_activation!(
            asm,
            activation,
            8,
            [ymm0, ymm1, ymm2, ymm3, ymm4, ymm5, ymm6],
            [ymm9, ymm10, ymm11, ymm12],
            constant,
            |asm: &mut CodeAssembler| -> Result<(), IcedError> {
                // Lane i is in when rdx > i.
                asm.vmovd(xmm8, edx)?;
                asm.vpbroadcastd(ymm8, xmm8)?;
                asm.vpcmpgtd(ymm8, ymm8, constant(Lanes))
            },
            |asm: &mut CodeAssembler, x: iced_x86::code_asm::AsmRegisterYmm| {
                asm.vmaskmovps(x, ymm8, ptr(rdi))
            },
            |asm: &mut CodeAssembler, u: iced_x86::code_asm::AsmRegisterYmm| {
                asm.vmaskmovps(ptr(rsi), ymm8, u)
            },
            |asm: &mut CodeAssembler, y: iced_x86::code_asm::AsmRegisterYmm, lowest| {
                asm.vcmpps(ymm7, y, lowest, 1)
            },
            |asm: &mut CodeAssembler, v: iced_x86::code_asm::AsmRegisterYmm| asm
                .vandnps(v, ymm7, v),
            |asm: &mut CodeAssembler,
             dst: iced_x86::code_asm::AsmRegisterYmm,
             src: iced_x86::code_asm::AsmRegisterYmm,
             m,
             bound,
             predicate| {
                asm.vcmpps(ymm13, m, bound, predicate)?;
                asm.vblendvps(dst, dst, src, ymm13)
            }
        ),
    }
    asm.vzeroupper()?;
    asm.ret()?;
    let used = used.into_inner();
    for ((constant, label), _) in constants
        .iter()
        .zip(labels.iter_mut())
        .zip(used)
        .filter(|(_, used)| *used)
    {
        asm.set_label(label)?;
        asm.dd(&constant.data())?;
    }
    asm.assemble(0)
}

/// The instructions an integer GEMM tile multiplies with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IntegerForm {
    /// AVX512-VNNI: `vpdpbusd` on zmm, four u8 × i8 products a lane.
    Vnni512,
    /// AVX-VNNI: `vpdpbusd` (VEX) on ymm.
    VnniAvx2,
    /// AVX2 alone: `vpmaddwd` of i16 pairs on ymm, then `vpaddd`. A holds
    /// its u8 values widened to i16 and B its i8 weights widened to i16,
    /// two along K a lane, so no sum saturates (`vpmaddubsw` would, at
    /// 2 * 255 * 127).
    Avx2,
}

impl IntegerForm {
    fn width(self) -> Width {
        match self {
            IntegerForm::Vnni512 => Width::Avx512,
            IntegerForm::VnniAvx2 | IntegerForm::Avx2 => Width::Avx2,
        }
    }

    /// Columns of one register (one i32 sum each).
    pub(crate) fn register_columns(self) -> usize {
        self.width().register_columns()
    }

    /// Rows of a tile.
    pub(crate) fn rows(self) -> usize {
        match self {
            // Eighteen accumulators, B's two, A's one and a spare (of the 32
            // zmm registers): nine rows, the most A's three pointers
            // address, and a whole tile for the nine pixels of a 3x3 image
            // (ResNet's last stage), which eight-row tiles computed as 16.
            IntegerForm::Vnni512 => 9,
            // Twelve accumulators, B's two, A's one and a product: the 16
            // ymm registers.
            IntegerForm::VnniAvx2 | IntegerForm::Avx2 => 6,
        }
    }

    /// Steps of K in one four-byte group of A's row (and of a column of
    /// B's): four u8 × i8, or two i16 × i16.
    pub(crate) fn group_steps(self) -> usize {
        match self {
            IntegerForm::Vnni512 | IntegerForm::VnniAvx2 => 4,
            IntegerForm::Avx2 => 2,
        }
    }
}

/// Emits the integer tile of `$registers` registers a row for `$form`:
/// `$accumulators` (rows times registers of them), B's two registers (then
/// the clamp bounds), A's register and a spare (both then masks and
/// residuals); `$bytes` is one register's size, `$vnni` whether the form
/// multiplies with `vpdpbusd`, `$mask` masks a store or load (see
/// [`integer_gemm_tile`]), `$round` rounds a register to nearest even.
macro_rules! emit_integer_tile {
    ($asm:ident, $rows:expr, $registers:expr, $bytes:expr, $vnni:expr, $accumulators:expr, [$b0:expr, $b1:expr], $a:expr, $spare:expr, $mask:expr, $round:expr) => {{
        let (rows, registers): (usize, usize) = ($rows, $registers);
        let accumulators = &$accumulators[..rows * registers];
        let b_registers = &[$b0, $b1][..registers];
        let pointers = &[rdi, rax, r10][..rows.div_ceil(3)];
        for pair in pointers.windows(2) {
            $asm.lea(pair[1], ptr(pair[0] + r8 * 2))?;
            $asm.add(pair[1], r8)?;
        }
        for &accumulator in accumulators {
            $asm.vpsubd(accumulator, accumulator, accumulator)?;
        }
        let mut step = $asm.create_label();
        let mut sums = $asm.create_label();
        $asm.test(rcx, rcx)?;
        $asm.jle(sums)?;
        $asm.set_label(&mut step)?;
        // B's panel eight steps ahead, into the L1 cache, as the f32 tiles
        // prefetch theirs.
        let ahead = 8 * $bytes * registers as i32;
        for half in 0..b_registers.len() {
            $asm.prefetcht0(byte_ptr(rsi + ahead + $bytes * half as i32))?;
        }
        for (half, &register) in b_registers.iter().enumerate() {
            $asm.vmovups(register, ptr(rsi + $bytes * half as i32))?;
        }
        for row in 0..rows {
            $asm.vpbroadcastd($a, dword_ptr(a_row(row)))?;
            let row_accumulators = &accumulators[registers * row..registers * (row + 1)];
            for (&accumulator, &register) in row_accumulators.iter().zip(b_registers) {
                if $vnni {
                    $asm.vpdpbusd(accumulator, $a, register)?;
                } else {
                    $asm.vpmaddwd($spare, $a, register)?;
                    $asm.vpaddd(accumulator, accumulator, $spare)?;
                }
            }
        }
        for &pointer in pointers {
            $asm.add(pointer, 4)?;
        }
        $asm.add(rsi, ($bytes * registers) as i32)?;
        $asm.dec(rcx)?;
        $asm.jnz(step)?;
        $asm.set_label(&mut sums)?;
        // The stack arguments; B's registers hold the bounds now.
        let (low, high) = ($b0, $b1);
        $asm.mov(rax, qword_ptr(rsp + 8))?;
        $asm.mov(r11, qword_ptr(rsp + 16))?;
        $asm.vbroadcastss(low, dword_ptr(r11))?;
        $asm.vbroadcastss(high, dword_ptr(r11 + 4))?;
        $asm.mov(r10, qword_ptr(rsp + 24))?;
        $asm.mov(rsi, qword_ptr(rsp + 32))?;
        $asm.mov(rcx, qword_ptr(rsp + 40))?;
        $asm.mov(r11, qword_ptr(rsp + 48))?;
        for row in accumulators.chunks(registers) {
            for (half, &accumulator) in row.iter().enumerate() {
                let column = $bytes * half as i32;
                $asm.vpaddd(accumulator, accumulator, ptr(rax + column))?;
                $asm.vcvtdq2ps(accumulator, accumulator)?;
                // The requantization: the scale, then to nearest even
                // (exact on the integer-valued sums for a scale of 1).
                $asm.vmulps(accumulator, accumulator, ptr(r11 + column))?;
                $round(&mut $asm, accumulator)?;
                // max(bound, x) and min(bound, x), as the f32 tiles.
                $asm.vmaxps(accumulator, low, accumulator)?;
                $asm.vminps(accumulator, high, accumulator)?;
            }
        }
        // Four ways to store: masked or not, with a residual or not.
        let mut done = $asm.create_label();
        let mut masked = $asm.create_label();
        for with_mask in [false, true] {
            if with_mask {
                $asm.set_label(&mut masked)?;
            } else {
                $asm.test(rcx, rcx)?;
                $asm.jnz(masked)?;
            }
            let mut plain = $asm.create_label();
            $asm.test(r10, r10)?;
            $asm.jz(plain)?;
            for with_residual in [true, false] {
                if !with_residual {
                    $asm.set_label(&mut plain)?;
                }
                for (row, accumulators) in accumulators.chunks(registers).enumerate() {
                    if row > 0 {
                        $asm.cmp(rsi, row as i32)?;
                        $asm.jle(done)?;
                    }
                    for (half, &accumulator) in accumulators.iter().enumerate() {
                        let offset = $bytes * half as i32;
                        $mask(&mut $asm, with_mask, with_residual, accumulator, offset)?;
                    }
                    $asm.add(rdx, r9)?;
                    if with_residual {
                        $asm.add(r10, r9)?;
                    }
                }
                $asm.jmp(done)?;
            }
        }
        $asm.set_label(&mut done)?;
    }};
}

/// The machine code of an integer GEMM tile of `registers` registers a row
/// (one or two); position independent. `gemm(a, b, c, groups, a_row,
/// c_row, bias, bounds, residual, rows, mask, scale)` (System V arguments,
/// the last six on the stack) computes `form.rows()` rows of
/// `C = R + clamp(round(f32(A @ B + bias[j]) * scale[j]), bounds[0],
/// bounds[1])` (`round` to nearest even; a requantization, which with
/// scales of 1 changes no integer-valued sum), exact in i32 until the
/// conversion: row `r` of A is `groups` four-byte groups at
/// `a + r * a_row` (u8, or for [`IntegerForm::Avx2`] u8 values as i16), B
/// is the panel of those groups for each column, one after the other
/// (`groups` times the tile's columns, four bytes each: i8, or i16 pairs),
/// `bias` one i32 per column, `scale` one f32 per column, `C[r, j]` at
/// `c + r * c_row + 4 * j` and `R[r, j]` at `residual + r * c_row + 4 * j`
/// (a null `residual` adds nothing). Only the first `rows` rows are stored (every row of A is
/// read), and with a `mask` (one i32 a column, all ones where the column
/// is stored and zero where not) only its columns are read of R and
/// stored.
pub(crate) fn integer_gemm_tile(form: IntegerForm, registers: usize) -> Result<Vec<u8>, IcedError> {
    use iced_x86::code_asm::registers::k::k1;
    use iced_x86::code_asm::registers::{ymm::*, zmm::*};
    let mut asm = CodeAssembler::new(64)?;
    let rows = form.rows();
    match form {
        IntegerForm::Vnni512 => {
            // zmm20 (A's) loads each mask; k1 holds it.
            let store = |asm: &mut CodeAssembler,
                         masked: bool,
                         residual: bool,
                         value: iced_x86::code_asm::AsmRegisterZmm,
                         offset: i32|
             -> Result<(), IcedError> {
                if masked {
                    asm.vmovups(zmm20, ptr(rcx + offset))?;
                    asm.vptestmd(k1, zmm20, zmm20)?;
                    if residual {
                        asm.vaddps(value.k1(), value, ptr(r10 + offset))?;
                    }
                    asm.vmovups(ptr(rdx + offset).k1(), value)
                } else {
                    if residual {
                        asm.vaddps(value, value, ptr(r10 + offset))?;
                    }
                    asm.vmovups(ptr(rdx + offset), value)
                }
            };
            emit_integer_tile!(
                asm,
                rows,
                registers,
                64,
                true,
                [
                    zmm0, zmm1, zmm2, zmm3, zmm4, zmm5, zmm6, zmm7, zmm8, zmm9, zmm10, zmm11,
                    zmm12, zmm13, zmm14, zmm15, zmm16, zmm17
                ],
                [zmm18, zmm19],
                zmm20,
                zmm21,
                store,
                |asm: &mut CodeAssembler, value| asm.vrndscaleps(value, value, 0)
            )
        }
        IntegerForm::VnniAvx2 | IntegerForm::Avx2 => {
            // ymm14 loads each mask, ymm15 the masked residual.
            let store = |asm: &mut CodeAssembler,
                         masked: bool,
                         residual: bool,
                         value: iced_x86::code_asm::AsmRegisterYmm,
                         offset: i32|
             -> Result<(), IcedError> {
                if masked {
                    asm.vmovups(ymm14, ptr(rcx + offset))?;
                    if residual {
                        asm.vpmaskmovd(ymm15, ymm14, ptr(r10 + offset))?;
                        asm.vaddps(value, value, ymm15)?;
                    }
                    asm.vpmaskmovd(ptr(rdx + offset), ymm14, value)
                } else {
                    if residual {
                        asm.vaddps(value, value, ptr(r10 + offset))?;
                    }
                    asm.vmovups(ptr(rdx + offset), value)
                }
            };
            emit_integer_tile!(
                asm,
                rows,
                registers,
                32,
                form == IntegerForm::VnniAvx2,
                [
                    ymm0, ymm1, ymm2, ymm3, ymm4, ymm5, ymm6, ymm7, ymm8, ymm9, ymm10, ymm11
                ],
                [ymm12, ymm13],
                ymm14,
                ymm15,
                store,
                |asm: &mut CodeAssembler, value| asm.vroundps(value, value, 0)
            )
        }
    }
    asm.vzeroupper()?;
    asm.ret()?;
    asm.assemble(0)
}
