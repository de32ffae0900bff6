"""ptec.inspect, ptec.compile and ptec.test: the CLI's inspect, compile and
test, shared with it through the compiler library."""

import ctypes
from pathlib import Path

import pytest

import ptec
from conftest import FIXTURES, atol_for, corpus_files, corpus_index

ADD = FIXTURES / "add.portable.bpte"


def test_inspect_reports_methods_and_suites() -> None:
    report = ptec.inspect(ADD)
    assert report["format"] == "bundled_program"
    [method] = report["methods"]
    assert method["name"] == "forward"
    assert [io["sizes"] for io in method["inputs"]] == [[4, 8], [8]]
    assert [io["dtype"] for io in method["inputs"]] == ["float32", "float32"]
    assert method["operators"] and all(key.startswith("aten::") for key in method["operators"])
    assert report["test_suites"][0]["method"] == "forward"
    assert "kernels" in method  # what ptec makes of it


def test_inspect_agrees_with_the_corpus_index(corpus: Path) -> None:
    """The index gives the shapes of the example inputs: a static input has
    exactly those sizes, a dynamic one bounds them."""
    index = corpus_index()
    for path in corpus_files():
        inputs = ptec.inspect(path)["methods"][0]["inputs"]
        examples = index[path.name]["inputs"]
        assert len(inputs) == len(examples), path.name
        for io, example in zip(inputs, examples):
            if io["dynamism"] == "static":
                assert io["sizes"] == example, path.name
            else:
                assert len(io["sizes"]) == len(example), path.name
                assert all(bound >= size for bound, size in zip(io["sizes"], example)), path.name


def test_compile_writes_a_shared_object_with_a_c_abi(tmp_path: Path) -> None:
    output = tmp_path / "add.so"
    header = tmp_path / "add.h"
    assert ptec.compile(ADD, output, header=header, prefix="addlib") is None
    library = ctypes.CDLL(str(output))
    library.addlib_method_count.restype = ctypes.c_int
    assert library.addlib_method_count() == 1
    assert "addlib_run" in header.read_text()


def test_compile_text_outputs_and_files(tmp_path: Path) -> None:
    ir = ptec.compile(ADD, emit="ir")
    assert ir is not None and "forward" in ir
    asm = ptec.compile(ADD, emit="asm")
    assert asm is not None and "ptec_run" in asm
    assert ptec.compile(ADD, tmp_path / "add.ir", emit="ir") is None
    assert (tmp_path / "add.ir").read_text() == ir
    assert ptec.compile(ADD, tmp_path / "add.o", emit="obj") is None
    assert (tmp_path / "add.o").read_bytes()[:4] == b"\x7fELF"
    arm = tmp_path / "add-aarch64.o"
    ptec.compile(ADD, arm, target="aarch64-unknown-linux-gnu", emit="obj")
    assert arm.read_bytes()[18] == 183  # e_machine: EM_AARCH64
    ptec.compile(FIXTURES / "add.vulkan.bpte", tmp_path / "shaders", emit="spirv")
    assert (tmp_path / "shaders" / "manifest.json").is_file()


def test_test_passes_corpus_programs(corpus: Path) -> None:
    """A few small programs of each kind (test_bundled.py runs the whole
    corpus through ptec.runtime; running it twice would double CI's time)."""
    names = ["mlp.portable.bpte", "small_cnn.xnnpack-q8.bpte", "llama_block.vulkan.bpte"]
    for path in (corpus / name for name in names):
        report = ptec.test(path, atol=max(atol_for(path), 1e-5))
        assert report["pass"], report
        assert report["cases"] and all(case["pass"] for case in report["cases"])


def test_test_fails_where_outputs_differ(corpus: Path) -> None:
    """mlp's outputs are within 3e-7 of the expected ones, not exactly them:
    with no tolerance they fail, with the defaults they pass."""
    path = corpus / "mlp.portable.bpte"
    assert ptec.test(path)["pass"]
    report = ptec.test(path, rtol=0.0, atol=0.0)
    assert report["pass"] is False
    assert any("expected" in case.get("problem", "") for case in report["cases"])


@pytest.mark.parametrize("backend", ["jit", "aot"])
def test_test_on_each_cpu_backend(backend: str) -> None:
    report = ptec.test(FIXTURES / "counter.portable.bpte", backend=backend)
    assert report["pass"], report
