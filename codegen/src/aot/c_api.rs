//! The C ABI of a compiled library ([`ptec_runtime::c_abi`]), generated
//! around the methods' entry points: Cranelift functions that create and
//! destroy instances, describe methods, check and copy tensors and run a
//! method, and the read-only tables they read. Nothing here is linked from
//! Rust; the library needs libc alone (`calloc`, `free`, `memcpy`, and
//! pthreads through the thread pool linked beside it).

use std::mem::{offset_of, size_of};

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    AbiParam, Block, FuncRef, InstBuilder, MemFlagsData, Type, UserFuncName, Value, types,
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{DataId, FuncId, Linkage, Module};
use ptec_runtime::c_abi::{CTensor, CTensorInfo, Status, symbol};
use ptec_runtime::{DimSpec, MethodAbi, TensorSlot};

use super::define_readonly;
use crate::define::Definer;
use crate::emit::PTR;
use crate::error::CodegenError;

/// A method whose entry point and constant table are defined in the module.
pub(crate) struct MethodCode<'m> {
    pub abi: &'m MethodAbi,
    pub entry: FuncId,
    pub constant_table: DataId,
}

/// The byte layout of the method table the query functions read (one entry
/// per method); private to the library.
mod method_entry {
    pub const NAME: i32 = 0;
    pub const INPUT_COUNT: i32 = 8;
    pub const OUTPUT_COUNT: i32 = 12;
    pub const INPUTS: i32 = 16;
    pub const OUTPUTS: i32 = 24;
    pub const SIZE: usize = 32;
}

const ARENA_ALIGNMENT: i64 = 64;

/// Loads from memory the caller passed: may trap, no alignment promised.
fn caller_memory() -> MemFlagsData {
    MemFlagsData::new()
}

/// Loads from the library's own tables and instances.
fn own_memory() -> MemFlagsData {
    MemFlagsData::trusted()
}

/// Bytes with pointers to other data objects, being laid out.
#[derive(Default)]
struct Blob {
    bytes: Vec<u8>,
    pointers: Vec<(u32, DataId)>,
}

impl Blob {
    fn i32(&mut self, value: i32) {
        self.bytes.extend(value.to_le_bytes());
    }

    fn i64(&mut self, value: i64) {
        self.bytes.extend(value.to_le_bytes());
    }

    fn pointer(&mut self, target: DataId) {
        self.pointers.push((self.bytes.len() as u32, target));
        self.bytes.extend([0; 8]);
    }
}

/// The libc functions the generated code calls, and the thread pool's.
struct Libc {
    calloc: FuncId,
    free: FuncId,
    memcpy: FuncId,
    pool_create: FuncId,
    pool_destroy: FuncId,
}

impl Libc {
    fn import(module: &mut dyn Module) -> Result<Libc, CodegenError> {
        let mut import = |name: &str, params: &[Type], returns: &[Type]| {
            declare_function(module, name, Linkage::Import, params, returns)
        };
        Ok(Libc {
            calloc: import("calloc", &[PTR, PTR], &[PTR])?,
            free: import("free", &[PTR], &[])?,
            memcpy: import("memcpy", &[PTR, PTR, PTR], &[PTR])?,
            pool_create: import("ptec_pool_create", &[types::I32, types::I64], &[PTR])?,
            pool_destroy: import("ptec_pool_destroy", &[PTR], &[])?,
        })
    }
}

/// Declares function `name` taking `params` and returning `returns`.
fn declare_function(
    module: &mut dyn Module,
    name: &str,
    linkage: Linkage,
    params: &[Type],
    returns: &[Type],
) -> Result<FuncId, CodegenError> {
    let mut signature = module.make_signature();
    signature
        .params
        .extend(params.iter().map(|&ty| AbiParam::new(ty)));
    signature
        .returns
        .extend(returns.iter().map(|&ty| AbiParam::new(ty)));
    Ok(module.declare_function(name, linkage, &signature)?)
}

/// Declares and defines the C ABI of a library holding `methods`, with
/// functions named `<prefix>_<name>`.
pub(crate) fn define_c_api(
    module: &mut dyn Module,
    prefix: &str,
    methods: &[MethodCode<'_>],
    definer: &mut Definer<'_>,
) -> Result<(), CodegenError> {
    let libc = Libc::import(module)?;
    let mut api = Api {
        module,
        prefix,
        definer,
        libc,
        context: FunctionBuilderContext::new(),
    };
    let layout = InstanceLayout::new(methods);
    let table = api.method_table(methods)?;
    let messages = api.message_table(methods)?;
    let destroy = api.declare(symbol::DESTROY, &[PTR], &[])?;
    api.define_destroy(destroy, &layout)?;
    api.define_create(destroy, methods, &layout)?;
    let scratch = methods
        .iter()
        .map(|method| method.abi.scratch_bytes)
        .max()
        .unwrap_or(0);
    api.define_set_threads(&layout, scratch)?;
    api.define_method_count(methods.len())?;
    api.define_method_name(table, methods.len())?;
    for (name, field) in [
        (symbol::INPUT_COUNT, method_entry::INPUT_COUNT),
        (symbol::OUTPUT_COUNT, method_entry::OUTPUT_COUNT),
    ] {
        api.define_tensor_count(name, table, methods.len(), field)?;
    }
    for (name, count, infos) in [
        (
            symbol::INPUT_INFO,
            method_entry::INPUT_COUNT,
            method_entry::INPUTS,
        ),
        (
            symbol::OUTPUT_INFO,
            method_entry::OUTPUT_COUNT,
            method_entry::OUTPUTS,
        ),
    ] {
        api.define_tensor_info(name, table, methods.len(), count, infos)?;
    }
    api.define_status_message(messages)?;
    let mut runs = Vec::with_capacity(methods.len());
    let mut error_base = 0;
    for (index, method) in methods.iter().enumerate() {
        runs.push(api.define_method_run(index, method, &layout, error_base)?);
        error_base += method.abi.errors.len() as i32;
    }
    api.define_run(&runs)
}

/// Where each method's arena pointer and symbolic sizes live in an
/// instance.
struct InstanceLayout {
    /// Byte offset of each method's sizes of symbolic dimensions (the arena
    /// pointers come first, one per method, then the allocations holding
    /// the arenas, one per method).
    dims: Vec<i32>,
    /// Byte offset of the thread pool's pointer (null: one thread).
    pool: i32,
    bytes: i64,
}

impl InstanceLayout {
    fn new(methods: &[MethodCode<'_>]) -> InstanceLayout {
        let mut offset = 16 * methods.len() as i32;
        let dims = methods
            .iter()
            .map(|method| {
                let start = offset;
                offset += 8 * method.abi.dim_bounds.len() as i32;
                start
            })
            .collect();
        InstanceLayout {
            dims,
            pool: offset,
            bytes: i64::from(offset + 8),
        }
    }

    fn arena(method: usize) -> i32 {
        8 * method as i32
    }

    /// Where the pointer `calloc` returned for a method's arena is (the
    /// arena is that pointer rounded up to [`ARENA_ALIGNMENT`]).
    fn allocation(&self, method: usize) -> i32 {
        8 * (self.dims.len() + method) as i32
    }
}

struct Api<'m, 'p, 'l> {
    module: &'m mut dyn Module,
    prefix: &'p str,
    definer: &'m mut Definer<'l>,
    libc: Libc,
    context: FunctionBuilderContext,
}

/// The function being defined: its builder and the module it lives in.
struct Body<'b, 'f> {
    b: FunctionBuilder<'f>,
    module: &'b mut dyn Module,
    libc: &'b Libc,
    /// Blocks that only return a constant: a status, or null for `None`.
    exits: Vec<(Block, Option<i32>)>,
}

impl Body<'_, '_> {
    fn call(&mut self, function: FuncId, args: &[Value]) -> Option<Value> {
        let reference: FuncRef = self.module.declare_func_in_func(function, self.b.func);
        let call = self.b.ins().call(reference, args);
        self.b.inst_results(call).first().copied()
    }

    fn address(&mut self, data: DataId) -> Value {
        let global = self.module.declare_data_in_func(data, self.b.func);
        self.b.ins().symbol_value(PTR, global)
    }

    fn return_i32(&mut self, value: i32) {
        let value = self.b.ins().iconst(types::I32, i64::from(value));
        self.b.ins().return_(&[value]);
    }

    fn return_null(&mut self) {
        let null = self.b.ins().iconst(PTR, 0);
        self.b.ins().return_(&[null]);
    }

    /// Continues in a new block when `condition` holds, else in `otherwise`.
    fn check(&mut self, condition: Value, otherwise: Block) {
        let next = self.b.create_block();
        self.b.ins().brif(condition, next, &[], otherwise, &[]);
        self.b.switch_to_block(next);
    }

    /// A block that returns `value` (filled in when the function ends).
    fn returning_i32(&mut self, value: i32) -> Block {
        let block = self.b.create_block();
        self.exits.push((block, Some(value)));
        block
    }

    /// A block that returns a null pointer.
    fn returning_null(&mut self) -> Block {
        let block = self.b.create_block();
        self.exits.push((block, None));
        block
    }

    /// `index < count`, unsigned (so negative indices are out of range).
    fn below(&mut self, index: Value, count: Value) -> Value {
        self.b.ins().icmp(IntCC::UnsignedLessThan, index, count)
    }

    /// The method table's entry for `method` (an i32), continuing at
    /// `otherwise` when there is no such method among `count`.
    fn method_entry(
        &mut self,
        table: DataId,
        count: usize,
        method: Value,
        otherwise: Block,
    ) -> Value {
        let count = self.b.ins().iconst(types::I32, count as i64);
        let valid = self.below(method, count);
        self.check(valid, otherwise);
        let base = self.address(table);
        let index = self.b.ins().uextend(PTR, method);
        let offset = self.b.ins().imul_imm_s(index, method_entry::SIZE as i64);
        self.b.ins().iadd(base, offset)
    }
}

impl Api<'_, '_, '_> {
    /// Declares exported function `<prefix>_<name>`.
    fn declare(
        &mut self,
        name: &str,
        params: &[Type],
        returns: &[Type],
    ) -> Result<FuncId, CodegenError> {
        self.declare_with(
            &format!("{}_{name}", self.prefix),
            Linkage::Export,
            params,
            returns,
        )
    }

    fn declare_with(
        &mut self,
        name: &str,
        linkage: Linkage,
        params: &[Type],
        returns: &[Type],
    ) -> Result<FuncId, CodegenError> {
        declare_function(&mut *self.module, name, linkage, params, returns)
    }

    /// Defines declared function `id`; `body` gets the function's
    /// parameters and must end every block it opens.
    fn define(
        &mut self,
        id: FuncId,
        body: impl FnOnce(&mut Body<'_, '_>, &[Value]),
    ) -> Result<(), CodegenError> {
        let mut context = self.module.make_context();
        context.func.signature = self
            .module
            .declarations()
            .get_function_decl(id)
            .signature
            .clone();
        context.func.name = UserFuncName::user(0, id.as_u32());
        let target = self.module.target_config();
        {
            let mut b = FunctionBuilder::new(&mut context.func, &mut self.context);
            let entry = b.create_block();
            b.append_block_params_for_function_params(entry);
            b.switch_to_block(entry);
            let params = b.block_params(entry).to_vec();
            let mut body_state = Body {
                b,
                module: &mut *self.module,
                libc: &self.libc,
                exits: Vec::new(),
            };
            body(&mut body_state, &params);
            for (block, value) in std::mem::take(&mut body_state.exits) {
                body_state.b.switch_to_block(block);
                match value {
                    Some(value) => body_state.return_i32(value),
                    None => body_state.return_null(),
                }
            }
            body_state.b.seal_all_blocks();
            body_state.b.finalize(target);
        }
        let name = self
            .module
            .declarations()
            .get_function_decl(id)
            .linkage_name(id)
            .into_owned();
        self.definer
            .function(&mut *self.module, id, &name, &mut context)?;
        Ok(())
    }

    /// Read-only data named `<prefix>__<name>`.
    fn data(&mut self, name: &str, blob: Blob, align: u64) -> Result<DataId, CodegenError> {
        let name = format!("{}__{name}", self.prefix);
        define_readonly(&mut *self.module, &name, blob.bytes, align, &blob.pointers)
    }

    fn c_string(&mut self, name: &str, text: &str) -> Result<DataId, CodegenError> {
        let mut blob = Blob::default();
        blob.bytes.extend(text.bytes().filter(|&byte| byte != 0));
        blob.bytes.push(0);
        self.data(name, blob, 1)
    }

    /// One `CTensorInfo` per slot, with its arrays.
    fn tensor_infos(
        &mut self,
        name: &str,
        abi: &MethodAbi,
        slots: &[TensorSlot],
    ) -> Result<DataId, CodegenError> {
        let mut infos = Blob::default();
        for (index, slot) in slots.iter().enumerate() {
            let mut sizes = Blob::default();
            let mut max_sizes = Blob::default();
            for dim in &slot.shape {
                let (size, bound) = match *dim {
                    DimSpec::Fixed(size) => (size as i64, size as i64),
                    DimSpec::Symbol(symbol) => (-1, abi.dim_bounds[symbol] as i64),
                };
                sizes.i64(size);
                max_sizes.i64(bound);
            }
            let dim_order = Blob {
                bytes: slot.dim_order.clone(),
                pointers: Vec::new(),
            };
            let start = infos.bytes.len();
            infos.i32(slot.element.code());
            infos.i32(slot.shape.len() as i32);
            let sizes = self.data(&format!("{name}{index}_sizes"), sizes, 8)?;
            infos.pointer(sizes);
            let max_sizes = self.data(&format!("{name}{index}_max_sizes"), max_sizes, 8)?;
            infos.pointer(max_sizes);
            let dim_order = self.data(&format!("{name}{index}_dim_order"), dim_order, 1)?;
            infos.pointer(dim_order);
            debug_assert_eq!(infos.bytes.len() - start, size_of::<CTensorInfo>());
        }
        self.data(name, infos, 8)
    }

    fn method_table(&mut self, methods: &[MethodCode<'_>]) -> Result<DataId, CodegenError> {
        debug_assert_eq!(offset_of!(CTensorInfo, sizes), 8);
        let mut table = Blob::default();
        for (index, method) in methods.iter().enumerate() {
            let name = self.c_string(&format!("method{index}_name"), &method.abi.name)?;
            let inputs = self.tensor_infos(
                &format!("method{index}_input"),
                method.abi,
                &method.abi.inputs,
            )?;
            let outputs = self.tensor_infos(
                &format!("method{index}_output"),
                method.abi,
                &method.abi.outputs,
            )?;
            table.pointer(name);
            table.i32(method.abi.inputs.len() as i32);
            table.i32(method.abi.outputs.len() as i32);
            table.pointer(inputs);
            table.pointer(outputs);
            debug_assert_eq!(table.bytes.len(), (index + 1) * method_entry::SIZE);
        }
        self.data("methods", table, 8)
    }

    /// Messages for every status from the lowest ABI error to the last
    /// method error; `status_message` indexes it by `status - lowest`.
    fn message_table(&mut self, methods: &[MethodCode<'_>]) -> Result<MessageTable, CodegenError> {
        let mut messages: Vec<String> = Status::ALL
            .iter()
            .rev()
            .map(|status| status.message().to_string())
            .collect();
        messages.push("success".to_string());
        for method in methods {
            messages.extend(
                method
                    .abi
                    .errors
                    .iter()
                    .map(|error| format!("method {}: {error}", method.abi.name)),
            );
        }
        let mut table = Blob::default();
        for (index, message) in messages.iter().enumerate() {
            let text = self.c_string(&format!("message{index}"), message)?;
            table.pointer(text);
        }
        let lowest = Status::ALL
            .iter()
            .map(|&status| status as i32)
            .min()
            .unwrap_or(0);
        Ok(MessageTable {
            table: self.data("messages", table, 8)?,
            unknown: self.c_string("message_unknown", "unknown status")?,
            lowest,
            count: messages.len() as i64,
        })
    }

    fn define_destroy(&mut self, id: FuncId, layout: &InstanceLayout) -> Result<(), CodegenError> {
        let methods = layout.dims.len();
        self.define(id, |body, params| {
            let instance = params[0];
            let done = body.b.create_block();
            // Only a non-null instance is freed.
            let free = body.b.create_block();
            body.b.ins().brif(instance, free, &[], done, &[]);
            body.b.switch_to_block(free);
            let pool = body.b.ins().load(PTR, own_memory(), instance, layout.pool);
            body.call(body.libc.pool_destroy, &[pool]);
            for method in 0..methods {
                let allocation =
                    body.b
                        .ins()
                        .load(PTR, own_memory(), instance, layout.allocation(method));
                body.call(body.libc.free, &[allocation]);
            }
            body.call(body.libc.free, &[instance]);
            body.b.ins().jump(done, &[]);
            body.b.switch_to_block(done);
            body.b.ins().return_(&[]);
        })
    }

    fn define_create(
        &mut self,
        destroy: FuncId,
        methods: &[MethodCode<'_>],
        layout: &InstanceLayout,
    ) -> Result<(), CodegenError> {
        let id = self.declare(symbol::CREATE, &[], &[PTR])?;
        let mut initial_states = Vec::new();
        for (index, method) in methods.iter().enumerate() {
            for (state_index, state) in method.abi.states.iter().enumerate() {
                if let Some(initial) = &state.initial {
                    let data = self.data(
                        &format!("method{index}_state{state_index}"),
                        Blob {
                            bytes: initial.clone(),
                            pointers: Vec::new(),
                        },
                        16,
                    )?;
                    initial_states.push((index, state.offset as i64, data, initial.len() as i64));
                }
            }
        }
        self.define(id, |body, _| {
            let one = body.b.ins().iconst(PTR, 1);
            let bytes = body.b.ins().iconst(PTR, layout.bytes);
            let instance = body
                .call(body.libc.calloc, &[one, bytes])
                .expect("calloc returns");
            let null = body.returning_null();
            body.check(instance, null);
            let failed = body.b.create_block();
            for (index, method) in methods.iter().enumerate() {
                // calloc's memory is zeroed as it is first touched (large
                // blocks are fresh mappings), so an arena planned for
                // dynamic bounds costs memory for the sizes a run uses;
                // the arena starts at the first aligned byte in it.
                let bytes = method
                    .abi
                    .arena_bytes
                    .max(1)
                    .saturating_add(ARENA_ALIGNMENT as u64 - 1);
                // An arena beyond the address space: calloc refuses it.
                let size = body
                    .b
                    .ins()
                    .iconst(PTR, i64::try_from(bytes).unwrap_or(i64::MAX));
                let allocation = body
                    .call(body.libc.calloc, &[one, size])
                    .expect("calloc returns");
                body.check(allocation, failed);
                body.b
                    .ins()
                    .store(own_memory(), allocation, instance, layout.allocation(index));
                let end = body.b.ins().iadd_imm_s(allocation, ARENA_ALIGNMENT - 1);
                let arena = body.b.ins().band_imm_s(end, -ARENA_ALIGNMENT);
                body.b
                    .ins()
                    .store(own_memory(), arena, instance, InstanceLayout::arena(index));
                for &(_, offset, data, len) in
                    initial_states.iter().filter(|state| state.0 == index)
                {
                    let destination = body.b.ins().iadd_imm_s(arena, offset);
                    let source = body.address(data);
                    let len = body.b.ins().iconst(PTR, len);
                    body.call(body.libc.memcpy, &[destination, source, len]);
                }
            }
            body.b.ins().return_(&[instance]);
            body.b.switch_to_block(failed);
            body.call(destroy, &[instance]);
            body.return_null();
        })
    }

    /// `<prefix>_set_threads(instance, threads)`: replaces the instance's
    /// pool with one of `threads` threads (none for one), each worker with
    /// `scratch` bytes of scratch memory, the most any method needs.
    fn define_set_threads(
        &mut self,
        layout: &InstanceLayout,
        scratch: u64,
    ) -> Result<(), CodegenError> {
        let id = self.declare(symbol::SET_THREADS, &[PTR, types::I32], &[types::I32])?;
        self.define(id, |body, params| {
            let (instance, threads) = (params[0], params[1]);
            let null_argument = body.returning_i32(Status::NullArgument as i32);
            let bad_threads = body.returning_i32(Status::BadThreads as i32);
            body.check(instance, null_argument);
            let positive = body
                .b
                .ins()
                .icmp_imm_s(IntCC::SignedGreaterThan, threads, 0);
            body.check(positive, bad_threads);
            let old = body.b.ins().load(PTR, own_memory(), instance, layout.pool);
            body.call(body.libc.pool_destroy, &[old]);
            let null = body.b.ins().iconst(PTR, 0);
            body.b
                .ins()
                .store(own_memory(), null, instance, layout.pool);
            let several = body
                .b
                .ins()
                .icmp_imm_s(IntCC::SignedGreaterThan, threads, 1);
            let one = body.returning_i32(0);
            body.check(several, one);
            let bytes = body.b.ins().iconst(types::I64, scratch as i64);
            let pool = body
                .call(body.libc.pool_create, &[threads, bytes])
                .expect("ptec_pool_create returns");
            body.check(pool, bad_threads);
            body.b
                .ins()
                .store(own_memory(), pool, instance, layout.pool);
            body.return_i32(0);
        })
    }

    fn define_method_count(&mut self, count: usize) -> Result<(), CodegenError> {
        let id = self.declare(symbol::METHOD_COUNT, &[], &[types::I32])?;
        self.define(id, |body, _| body.return_i32(count as i32))
    }

    fn define_method_name(&mut self, table: DataId, count: usize) -> Result<(), CodegenError> {
        let id = self.declare(symbol::METHOD_NAME, &[types::I32], &[PTR])?;
        self.define(id, |body, params| {
            let null = body.returning_null();
            let entry = body.method_entry(table, count, params[0], null);
            let name = body
                .b
                .ins()
                .load(PTR, own_memory(), entry, method_entry::NAME);
            body.b.ins().return_(&[name]);
        })
    }

    fn define_tensor_count(
        &mut self,
        name: &str,
        table: DataId,
        count: usize,
        field: i32,
    ) -> Result<(), CodegenError> {
        let id = self.declare(name, &[types::I32], &[types::I32])?;
        self.define(id, |body, params| {
            let no_method = body.returning_i32(Status::NoSuchMethod as i32);
            let entry = body.method_entry(table, count, params[0], no_method);
            let tensors = body.b.ins().load(types::I32, own_memory(), entry, field);
            body.b.ins().return_(&[tensors]);
        })
    }

    fn define_tensor_info(
        &mut self,
        name: &str,
        table: DataId,
        count: usize,
        count_field: i32,
        infos_field: i32,
    ) -> Result<(), CodegenError> {
        let id = self.declare(name, &[types::I32, types::I32], &[PTR])?;
        self.define(id, |body, params| {
            let null = body.returning_null();
            let entry = body.method_entry(table, count, params[0], null);
            let tensors = body
                .b
                .ins()
                .load(types::I32, own_memory(), entry, count_field);
            let valid = body.below(params[1], tensors);
            body.check(valid, null);
            let infos = body.b.ins().load(PTR, own_memory(), entry, infos_field);
            let index = body.b.ins().uextend(PTR, params[1]);
            let offset = body
                .b
                .ins()
                .imul_imm_s(index, size_of::<CTensorInfo>() as i64);
            let info = body.b.ins().iadd(infos, offset);
            body.b.ins().return_(&[info]);
        })
    }

    fn define_status_message(&mut self, messages: MessageTable) -> Result<(), CodegenError> {
        let id = self.declare(symbol::STATUS_MESSAGE, &[types::I32], &[PTR])?;
        self.define(id, |body, params| {
            let unknown = body.b.create_block();
            let status = body.b.ins().sextend(types::I64, params[0]);
            let index = body.b.ins().iadd_imm_s(status, -i64::from(messages.lowest));
            let count = body.b.ins().iconst(types::I64, messages.count);
            let valid = body.below(index, count);
            body.check(valid, unknown);
            let table = body.address(messages.table);
            let offset = body.b.ins().imul_imm_s(index, 8);
            let entry = body.b.ins().iadd(table, offset);
            let message = body.b.ins().load(PTR, own_memory(), entry, 0);
            body.b.ins().return_(&[message]);
            body.b.switch_to_block(unknown);
            let message = body.address(messages.unknown);
            body.b.ins().return_(&[message]);
        })
    }

    /// `<prefix>_run` for one method: checks and copies the inputs, calls
    /// the entry point, and copies the outputs and their sizes out.
    fn define_method_run(
        &mut self,
        index: usize,
        method: &MethodCode<'_>,
        layout: &InstanceLayout,
        error_base: i32,
    ) -> Result<FuncId, CodegenError> {
        let id = self.declare_with(
            &format!("{}__method{index}_run", self.prefix),
            Linkage::Local,
            &[PTR, PTR, PTR],
            &[types::I32],
        )?;
        let abi = method.abi;
        let dims_offset = layout.dims[index];
        self.define(id, |body, params| {
            let (instance, inputs, outputs) = (params[0], params[1], params[2]);
            let null_argument = body.returning_i32(Status::NullArgument as i32);
            let bad_sizes = body.returning_i32(Status::BadSizes as i32);
            // Each tensor's data and sizes pointers, loaded and checked once,
            // before anything is written.
            let fields = |body: &mut Body<'_, '_>, tensors: Value, count: usize| {
                if count > 0 {
                    body.check(tensors, null_argument);
                }
                (0..count)
                    .map(|slot| {
                        let [data, sizes] = [offset_of!(CTensor, data), offset_of!(CTensor, sizes)]
                            .map(|field| {
                                let offset = (slot * size_of::<CTensor>() + field) as i32;
                                let value =
                                    body.b.ins().load(PTR, caller_memory(), tensors, offset);
                                body.check(value, null_argument);
                                value
                            });
                        (data, sizes)
                    })
                    .collect::<Vec<_>>()
            };
            let input_fields = fields(body, inputs, abi.inputs.len());
            let output_fields = fields(body, outputs, abi.outputs.len());
            let arena =
                body.b
                    .ins()
                    .load(PTR, own_memory(), instance, InstanceLayout::arena(index));
            let dims = body.b.ins().iadd_imm_s(instance, i64::from(dims_offset));
            let unset = body.b.ins().iconst(types::I64, -1);
            for symbol in 0..abi.dim_bounds.len() {
                body.b
                    .ins()
                    .store(own_memory(), unset, dims, 8 * symbol as i32);
            }
            for (slot, &(data, sizes)) in abi.inputs.iter().zip(&input_fields) {
                let mut count = body.b.ins().iconst(types::I64, 1);
                for (axis, dim) in slot.shape.iter().enumerate() {
                    let size =
                        body.b
                            .ins()
                            .load(types::I64, caller_memory(), sizes, 8 * axis as i32);
                    match *dim {
                        DimSpec::Fixed(fixed) => {
                            let fits = body.b.ins().icmp_imm_s(IntCC::Equal, size, fixed as i64);
                            body.check(fits, bad_sizes);
                        }
                        DimSpec::Symbol(symbol) => {
                            let bound = abi.dim_bounds[symbol] as i64;
                            let fits = body.b.ins().icmp_imm_s(
                                IntCC::UnsignedLessThanOrEqual,
                                size,
                                bound,
                            );
                            body.check(fits, bad_sizes);
                            let offset = 8 * symbol as i32;
                            let seen = body.b.ins().load(types::I64, own_memory(), dims, offset);
                            let is_unset = body.b.ins().icmp_imm_s(IntCC::Equal, seen, -1);
                            let agrees = body.b.ins().icmp(IntCC::Equal, seen, size);
                            let fits = body.b.ins().bor(is_unset, agrees);
                            body.check(fits, bad_sizes);
                            body.b.ins().store(own_memory(), size, dims, offset);
                        }
                    }
                    count = body.b.ins().imul(count, size);
                }
                let bytes = body.b.ins().imul_imm_s(count, slot.element.size() as i64);
                let destination = body.b.ins().iadd_imm_s(arena, slot.offset as i64);
                body.call(body.libc.memcpy, &[destination, data, bytes]);
            }
            for (symbol, &bound) in abi.dim_bounds.iter().enumerate() {
                let offset = 8 * symbol as i32;
                let seen = body.b.ins().load(types::I64, own_memory(), dims, offset);
                let is_unset = body.b.ins().icmp_imm_s(IntCC::Equal, seen, -1);
                let bound = body.b.ins().iconst(types::I64, bound as i64);
                let size = body.b.ins().select(is_unset, bound, seen);
                body.b.ins().store(own_memory(), size, dims, offset);
            }
            let constants = body.address(method.constant_table);
            let pool = body.b.ins().load(PTR, own_memory(), instance, layout.pool);
            let status = body
                .call(method.entry, &[arena, constants, dims, pool])
                .expect("the entry point returns a status");
            let failed = body.b.create_block();
            body.b.append_block_param(failed, types::I32);
            let succeeded = body.b.create_block();
            body.b
                .ins()
                .brif(status, failed, &[status.into()], succeeded, &[]);
            body.b.switch_to_block(failed);
            let status = body.b.block_params(failed)[0];
            let status = body.b.ins().iadd_imm_s(status, i64::from(error_base));
            body.b.ins().return_(&[status]);
            body.b.switch_to_block(succeeded);
            for (slot, &(data, sizes)) in abi.outputs.iter().zip(&output_fields) {
                let mut count = body.b.ins().iconst(types::I64, 1);
                for (axis, dim) in slot.shape.iter().enumerate() {
                    let size = match *dim {
                        DimSpec::Fixed(fixed) => body.b.ins().iconst(types::I64, fixed as i64),
                        DimSpec::Symbol(symbol) => {
                            body.b
                                .ins()
                                .load(types::I64, own_memory(), dims, 8 * symbol as i32)
                        }
                    };
                    body.b
                        .ins()
                        .store(caller_memory(), size, sizes, 8 * axis as i32);
                    count = body.b.ins().imul(count, size);
                }
                let bytes = body.b.ins().imul_imm_s(count, slot.element.size() as i64);
                let source = body.b.ins().iadd_imm_s(arena, slot.offset as i64);
                body.call(body.libc.memcpy, &[data, source, bytes]);
            }
            body.return_i32(0);
        })?;
        Ok(id)
    }

    /// `<prefix>_run`: checks the instance and dispatches on the method.
    fn define_run(&mut self, runs: &[FuncId]) -> Result<(), CodegenError> {
        let id = self.declare(symbol::RUN, &[PTR, types::I32, PTR, PTR], &[types::I32])?;
        self.define(id, |body, params| {
            let (instance, method, inputs, outputs) = (params[0], params[1], params[2], params[3]);
            let null_argument = body.returning_i32(Status::NullArgument as i32);
            body.check(instance, null_argument);
            for (index, &run) in runs.iter().enumerate() {
                let this_one = body.b.create_block();
                let next = body.b.create_block();
                let matches = body.b.ins().icmp_imm_s(IntCC::Equal, method, index as i64);
                body.b.ins().brif(matches, this_one, &[], next, &[]);
                body.b.switch_to_block(this_one);
                let status = body
                    .call(run, &[instance, inputs, outputs])
                    .expect("a method's run returns a status");
                body.b.ins().return_(&[status]);
                body.b.switch_to_block(next);
            }
            body.return_i32(Status::NoSuchMethod as i32);
        })
    }
}

/// The status messages' table and its range.
struct MessageTable {
    table: DataId,
    unknown: DataId,
    lowest: i32,
    count: i64,
}
