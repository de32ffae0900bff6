"""ptec.runtime's own behaviour: state across calls, method caching, the
inputs it accepts, the outputs it returns and what it copies, ptec's
switches, and the GIL released while methods compile and run."""

import threading
import time
from pathlib import Path

import numpy as np
import pytest

import ptec
import ptec.bundled
from ptec.runtime import Runtime, Verification
from conftest import FIXTURES, assert_close, not_run

try:
    import torch
except ImportError:
    torch = None

ADD = FIXTURES / "add.portable.bpte"  # x + 2 * y, y broadcast over rows
COUNTER = FIXTURES / "counter.portable.bpte"


def load(path: Path, **switches):
    return Runtime.get().load_program(path, **switches)


def plain(value):
    """An output as a numpy array, whichever type it came as."""
    return value.numpy() if torch is not None and isinstance(value, torch.Tensor) else value


def add_inputs():
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    y = np.linspace(-1, 1, 8, dtype=np.float32)
    return x, y


def test_add_computes_x_plus_2y() -> None:
    x, y = add_inputs()
    [out] = load(ADD).load_method("forward").execute([x, y])
    np.testing.assert_allclose(plain(out), x + 2 * y, rtol=1e-6)


def test_outputs_are_torch_tensors_when_torch_is_there_else_arrays() -> None:
    [out] = load(ADD).load_method("forward").execute(list(add_inputs()))
    if torch is None:
        assert isinstance(out, np.ndarray)
    else:
        assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
        assert out.is_contiguous() and out.stride() == (8, 1)
    assert tuple(out.shape) == (4, 8)


def test_state_persists_across_calls_and_methods_own_it(corpus: Path) -> None:
    """The counter adds its input to a buffer and returns the buffer: the
    buffer carries over between calls on one method; another program's
    method starts from the file's initial state."""
    program = load(corpus / "counter.portable.bpte")
    method = program.load_method("forward")
    ones = np.ones(4, dtype=np.float32)
    for expected in (1.0, 2.0, 3.0):
        [out] = method.execute([ones])
        np.testing.assert_array_equal(plain(out), np.full(4, expected, np.float32))
    assert program.load_method("forward") is method, "methods are cached, as ExecuTorch caches them"
    [out] = program.load_method("forward").execute([ones])
    np.testing.assert_array_equal(plain(out), np.full(4, 4.0, np.float32))
    [fresh] = load(corpus / "counter.portable.bpte").load_method("forward").execute([ones])
    np.testing.assert_array_equal(plain(fresh), np.full(4, 1.0, np.float32))


def test_inputs_as_torch_numpy_and_lists_agree() -> None:
    x, y = add_inputs()
    method = load(ADD).load_method("forward")
    from_numpy = plain(method.execute([x, y])[0])
    from_tuple = plain(method.execute((x, y))[0])
    np.testing.assert_array_equal(from_numpy, from_tuple)
    # A Fortran-ordered array is made contiguous (a copy), not misread.
    [fortran] = method.execute([np.asfortranarray(x), y])
    np.testing.assert_array_equal(plain(fortran), from_numpy)
    if torch is not None:
        [from_torch] = method.execute([torch.from_numpy(x), torch.from_numpy(y)])
        np.testing.assert_array_equal(from_torch.numpy(), from_numpy)
        # A transposed view is read by its values, not its memory.
        strided = torch.from_numpy(np.ascontiguousarray(x.T)).t()
        assert not strided.is_contiguous()
        np.testing.assert_array_equal(plain(method.execute([strided, torch.from_numpy(y)])[0]), from_numpy)


def test_a_lone_tensor_is_the_one_input(corpus: Path) -> None:
    method = load(corpus / "counter.portable.bpte").load_method("forward")
    [out] = method.execute(np.ones(4, dtype=np.float32))
    np.testing.assert_array_equal(plain(out), np.ones(4, np.float32))


def test_outputs_are_not_copied_on_the_python_side() -> None:
    """An output array's memory is the buffer ptec returned: numpy adopted
    it (the array does not own a copy, its base is ptec's buffer), and a
    torch output shares that memory."""
    [out] = load(ADD).load_method("forward").execute(list(add_inputs()))
    if torch is not None:
        array = out.numpy()
        assert array.ctypes.data == out.data_ptr()
    else:
        array = out
    assert not array.flags.owndata
    base = array
    while isinstance(base, np.ndarray):
        base = base.base
    # The chain of views ends in the object holding ptec's buffer.
    assert base is not None and not isinstance(base, (np.ndarray, bytes, bytearray))
    assert array.flags.writeable and array.flags.aligned


def test_every_call_returns_new_outputs() -> None:
    """As ExecuTorch clones its outputs: a later call never changes what an
    earlier one returned."""
    method = load(ADD).load_method("forward")
    x, y = add_inputs()
    [first] = method.execute([x, y])
    kept = plain(first).copy()
    method.execute([x * 3, y])
    np.testing.assert_array_equal(plain(first), kept)


def test_metadata_describes_inputs_and_outputs(corpus: Path) -> None:
    program = load(corpus / "dyn_batch.portable.bpte")
    meta = program.load_method("forward").metadata
    assert meta.name() == "forward" and meta.num_inputs() == 1 and meta.num_outputs() == 1
    info = meta.input_tensor_meta(0)
    assert info.sizes() == (32, 16)  # the upper bound of the dynamic batch
    assert info.dtype() == 6  # torch's ScalarType::Float
    assert info.is_memory_planned() and info.nbytes() == 32 * 16 * 4
    assert info.dim_order() == (0, 1)
    assert repr(info) == "TensorInfo(sizes=[32, 16], dtype=Float, is_memory_planned=True, nbytes=2048)"
    assert repr(program.metadata("forward")) == repr(meta)
    with pytest.raises(IndexError):
        meta.input_tensor_meta(1)
    assert meta.num_attributes() == 0


def test_dynamic_batch_runs_at_each_size(corpus: Path) -> None:
    method = load(corpus / "dyn_batch.portable.bpte").load_method("forward")
    for batch in (1, 4, 7, 32):
        [out] = method.execute([np.ones((batch, 16), dtype=np.float32)])
        assert tuple(out.shape) == (batch, 8)
    with pytest.raises(ptec.InputError, match="above its bound 32"):
        method.execute([np.ones((33, 16), dtype=np.float32)])


def test_int_bool_and_double_outputs_are_python_numbers() -> None:
    """The constant methods of LLM exports answer Python numbers, as
    executorch.runtime's do, and their metadata names the kinds."""
    program = load(FIXTURES / "dyn_seq.portable.bpte")
    for name, kind, expected in [
        ("get_max_seq_len", "Int", 128),
        ("use_kv_cache", "Bool", False),
        ("get_rope_theta", "Double", 10000.0),
    ]:
        method = program.load_method(name)
        [answer] = method.execute([])
        assert type(answer) is type(expected) and answer == expected, (name, answer)
        assert f"output_tensor_meta=[{kind!r}]" in repr(method.metadata)


def test_program_from_bytes_bytearray_file_and_path() -> None:
    bundle = ptec.bundled.read(ADD)
    x, y = add_inputs()
    results = []
    for source in (bundle.program, bytearray(bundle.program), str(ADD), ADD):
        method = Runtime.get().load_program(source).load_method("forward")
        results.append(plain(method.execute([x, y])[0]))
    with open(ADD, "rb") as file:
        results.append(plain(Runtime.get().load_program(file).load_method("forward").execute([x, y])[0]))
    for result in results[1:]:
        np.testing.assert_array_equal(result, results[0])


def test_a_program_with_its_data_file_runs_as_executorch_did() -> None:
    folder = FIXTURES / "llm" / "llama_xnnpack_ptd"
    program = Runtime.get().load_program(folder / "model.pte", data_path=folder / "model.ptd")
    method = program.load_method("forward")
    for step in sorted(folder.glob("step_*"))[:3]:
        inputs = [np.load(step / f"in_{index}.npy") for index in range(2)]
        [logits] = method.execute(inputs)
        assert_close(logits, np.load(step / "out_0.npy"), 1e-4, str(step))
    report = ptec.inspect(folder / "model.pte", data=[folder / "model.ptd"])
    assert report["named_data"]["data_files"] == 1


def test_backend_switch_runs_aot_and_the_same_results() -> None:
    x, y = add_inputs()
    program = load(ADD)
    jit = program.load_method("forward")
    aot = program.load_method("forward", backend="aot")
    assert (jit.backend, aot.backend) == ("jit", "aot") and aot is not jit
    np.testing.assert_array_equal(plain(aot.execute([x, y])[0]), plain(jit.execute([x, y])[0]))


def test_vulkan_backend_on_lavapipe() -> None:
    x, y = add_inputs()
    try:
        method = load(FIXTURES / "add.vulkan.bpte", backend="vulkan").load_method("forward")
    except ptec.DeviceError as error:
        not_run(f"no Vulkan device: {error}")
    np.testing.assert_allclose(plain(method.execute([x, y])[0]), x + 2 * y, rtol=1e-6)


def test_pass_switches_change_nothing_in_the_results() -> None:
    x, y = add_inputs()
    program = load(ADD)
    reference = plain(program.load_method("forward").execute([x, y])[0])
    for switches in (
        {"disable_passes": ["fuse-elementwise", "plan-memory"]},
        {"stop_after": "fold-constants"},
        {"verify": True, "microkernels": False},
    ):
        method = program.load_method("forward", **switches)
        np.testing.assert_array_equal(plain(method.execute([x, y])[0]), reference)


def test_threads_change_no_bit_of_the_outputs(corpus: Path) -> None:
    """mobilenet_v2's matrix products and depthwise convolutions are split
    across threads; each element is computed as on one thread."""
    program = load(corpus / "mobilenet_v2.portable.bpte")
    image = np.random.default_rng(1).standard_normal((1, 3, 224, 224), dtype=np.float32)
    [one] = program.load_method("forward", threads=1).execute([image])
    [three] = program.load_method("forward", threads=3).execute([image])
    [default] = program.load_method("forward").execute([image])
    np.testing.assert_array_equal(plain(three), plain(one))
    np.testing.assert_array_equal(plain(default), plain(one))


def test_bad_thread_counts_and_limits_are_refused() -> None:
    for threads in (0, -1, 1025, 2.0, True, "2"):
        with pytest.raises(ptec.UsageError, match="threads="):
            load(ADD, threads=threads)
    for limit in (-1, 1.5, None):
        with pytest.raises(ptec.UsageError, match="max_memory="):
            load(ADD).load_method("forward", max_memory=limit)


def test_limits_are_checked_before_anything_is_allocated() -> None:
    with pytest.raises(ptec.CompileError, match="planned memory.*above the limit of 64 bytes"):
        load(ADD, max_memory=64).load_method("forward")
    for backend in ("jit", "aot"):
        with pytest.raises(ptec.CompileError, match="compiled code.*above the limit of 64 bytes"):
            load(ADD, backend=backend, max_code=64).load_method("forward")
    report = ptec.test(ADD, max_code=64)
    assert not report["pass"] and "compiled code" in report["error"], report
    with pytest.raises(ptec.CompileError, match="compiled code"):
        ptec.compile(ADD, emit="asm", max_code=64)


def test_verification_levels_are_accepted() -> None:
    for level in (Verification.Minimal, Verification.InternalConsistency):
        assert Runtime.get().load_program(ADD, verification=level).method_names == {"forward"}


def test_registries() -> None:
    runtime = Runtime.get()
    assert runtime is Runtime.get()
    assert runtime.backend_registry.is_available("XnnpackBackend")
    assert not runtime.backend_registry.is_available("CoreMLBackend")
    assert "aten::add.out" in runtime.operator_registry.operator_names


def _max_gap_while(work, limit: float = 300.0) -> tuple:
    """Runs `work` on a thread while this thread counts; returns how long
    `work` took and the longest this thread went without running. An
    exception in `work` is raised here, and `work` running past `limit`
    seconds fails the test, so that neither leaves this thread counting
    forever."""
    done = threading.Event()
    elapsed = []
    failures = []

    def run():
        start = time.perf_counter()
        try:
            work()
        except BaseException as failure:  # raised again on the caller's thread
            failures.append(failure)
        finally:
            elapsed.append(time.perf_counter() - start)
            done.set()

    worker = threading.Thread(target=run, daemon=True)
    began = last = time.perf_counter()
    longest = 0.0
    worker.start()
    while not done.is_set():
        now = time.perf_counter()
        longest = max(longest, now - last)
        last = now
        if now - began > limit:
            pytest.fail(f"the work on the other thread ran past {limit} s")
    worker.join()
    if failures:
        raise failures[0]
    return elapsed[0], longest


def test_the_gil_is_released_while_compiling_and_running(corpus: Path) -> None:
    """While another thread compiles mobilenet_v2 and runs it, this thread
    keeps running: no pause as long as the work (it would wait for the
    whole call if the GIL were held)."""
    program = load(corpus / "mobilenet_v2.portable.bpte")
    methods = []
    compile_time, gap = _max_gap_while(lambda: methods.append(program.load_method("forward")))
    assert gap < compile_time / 2, (compile_time, gap)
    image = np.random.default_rng(0).standard_normal((1, 3, 224, 224), dtype=np.float32)
    run_time, gap = _max_gap_while(lambda: [methods[0].execute([image]) for _ in range(5)])
    assert gap < run_time / 5 / 2, (run_time, gap)


def test_bundled_reader_reads_cases() -> None:
    bundle = ptec.bundled.read(ADD)
    assert bundle.program[4:8] == b"ET12"
    [suite] = bundle.suites
    assert suite.method == "forward" and len(suite.cases) >= 1
    case = suite.cases[0]
    assert [tuple(v.shape) for v in case.inputs] == [(4, 8), (8,)]
    x, y = (plain(v) for v in case.inputs)
    assert_close(case.expected_outputs[0], x + 2 * y, 1e-5, "add's expected output")
