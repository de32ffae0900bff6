"""Export real models (torchvision's and ExecuTorch's example registry's) as
bundled programs, for checking ptec on programs nobody here wrote.

Each model is exported three times with the public exporter: without a
partitioner (``portable``), with ``XnnpackPartitioner`` (``xnnpack``) and with
``VulkanPartitioner`` (``vulkan``). Weights are random (seeded per model; no
downloads: torchvision builders get ``weights=None``, and ExecuTorch examples
that would download weights build their torchvision model without them);
batch-norm statistics are estimated on random inputs so that activations stay
well scaled. Each file holds one test case at a small but realistic input size,
whose expected outputs come from eager PyTorch.

The portable and XNNPACK programs are also run on ExecuTorch's runtime (the
anchor has no Vulkan backend), and the index records its largest error
(``executorch_error``), so that a difference in ptec can be told from one in
ExecuTorch. A model whose export fails in ExecuTorch is reported and skipped.

The models of ``QUANTIZED`` are also exported quantized to int8 (``xnnpack-q8``)
as ../shared/corpus/export.py's variant of that name is: PT2E static
quantization with XNNPACK's symmetric per-channel configuration, calibrated on
random batches, lowered with ``XnnpackPartitioner``; the expected outputs are
the quantized model's in eager PyTorch.

With ``--channels-last`` the models and their image inputs are exported in
channels-last memory format instead, as ``<model>.<variant>-cl.bpte`` (ExecuTorch
1.5.1's portable kernels refuse most such programs, its batch norm among them, and
its XNNPACK partitioner fails to lower them; the index records that).

Files are named ``<model>.<variant>.bpte``; ``index.json`` records, per file,
the model's source, input and output shapes, size, the operators the plan calls
outside delegates and ExecuTorch's error. The files are large (up to 100 MB):
they live outside the repository.

Check them with ``target/release/ptec test --backend B OUT_DIR/*.bpte`` for
each back end B (``jit``, ``aot``, ``vulkan``).

Usage (with the anchor environment from ../shared/anchor/setup.sh):
    $ANCHOR_PY scripts/gen_real_models.py [OUT_DIR]          # default: ~/.cache/ptec-models
    $ANCHOR_PY scripts/gen_real_models.py --only NAME...     # only these models
    $ANCHOR_PY scripts/gen_real_models.py --only resnet18 --variants xnnpack-q8
    $ANCHOR_PY scripts/gen_real_models.py --channels-last --variants portable vulkan
"""

import argparse
import importlib
import json
import sys
import traceback
from pathlib import Path

import torch
import torch.nn as nn
import torchvision.models as tv
from executorch.backends.vulkan.partitioner.vulkan_partitioner import VulkanPartitioner
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.devtools.bundled_program.serialize import (
    deserialize_from_flatbuffer_to_bundled_program,
)
from executorch.examples.models import MODEL_NAME_TO_MODEL
from executorch.runtime import Runtime

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_op_fixtures import OpFixture, export_bundled  # noqa: E402  (sibling script)

DEFAULT_OUT_DIR = Path.home() / ".cache" / "ptec-models"
PARTITIONERS = {
    "portable": lambda: [],
    "xnnpack": lambda: [XnnpackPartitioner()],
    "vulkan": lambda: [VulkanPartitioner()],
}


def calibrated(model: nn.Module, inputs) -> nn.Module:
    """Random initialization leaves batch norms at mean 0 and variance 1, which
    shrinks activations layer by layer; estimate the statistics on a few random
    batches shaped like ``inputs`` instead."""
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if norms:
        for norm in norms:
            norm.reset_running_stats()
            norm.momentum = None
        model.train()
        with torch.no_grad():
            for _ in range(3):
                model(*[torch.randn(4, *t.shape[1:]) for t in inputs])
    return model.eval()


def quantize_q8(model: nn.Module, inputs) -> nn.Module:
    """``model`` quantized to int8 as export.py's ``xnnpack-q8`` variant does it."""
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    quantizer = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True))
    module = prepare_pt2e(torch.export.export(model, inputs).module(), quantizer)
    with torch.no_grad():
        for _ in range(4):
            module(*[torch.randn_like(t) for t in inputs])
        module(*inputs)
    return Quantized(convert_pt2e(module))


class Quantized(nn.Module):
    """A quantized exported module, which refuses ``train``/``eval``: the
    exporter's callers switch modes, which this wrapper keeps to itself."""

    def __init__(self, module: nn.Module):
        super().__init__()
        self.module = module

    def train(self, mode: bool = True):
        self.training = mode
        return self

    def forward(self, *inputs):
        return self.module(*inputs)


class Segmentation(nn.Module):
    """A torchvision segmentation model's ``out`` map (the dict becomes a tensor)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


class FlatLstm(nn.Module):
    """ExecuTorch's ``lstm`` example with its state as two inputs and flat outputs
    (bundled programs hold tensors, not nested tuples)."""

    def __init__(self, lstm: nn.Module):
        super().__init__()
        self.lstm = lstm

    def forward(self, x, h0, c0):
        y, (h, c) = self.lstm(x, (h0, c0))
        return y, h, c


def small_vit() -> nn.Module:
    """A ViT-B/16 shaped like the original but small: 64x64 images, 16x16 patches,
    2 layers of 3 heads over 96 features."""
    from torchvision.models.vision_transformer import VisionTransformer

    model = VisionTransformer(
        image_size=64, patch_size=16, num_layers=2, num_heads=3, hidden_dim=96, mlp_dim=192, num_classes=100
    )
    # torchvision starts the head at zero, which would make every output 0.
    nn.init.normal_(model.heads.head.weight, std=0.1)
    nn.init.normal_(model.heads.head.bias, std=0.1)
    return model


def example(name: str):
    """ExecuTorch's example ``name`` (``executorch.examples.models``): its eager
    model and example inputs."""
    module, cls = MODEL_NAME_TO_MODEL[name]
    wrapper = getattr(importlib.import_module(f"executorch.examples.models.{module}"), cls)()
    return wrapper.get_eager_model(), tuple(wrapper.get_example_inputs())


def image(size: int):
    return lambda: (torch.randn(1, 3, size, size),)


def torchvision_model(builder, size: int, **kw):
    """A torchvision builder with random weights and an image input of ``size``."""
    return (lambda: builder(weights=None, **kw)), image(size)


def resnet50_example():
    """ExecuTorch's ``resnet50`` example builds torchvision's ResNet-50 with
    downloaded weights; build the same architecture with random ones, at the
    example's input shape scaled down to 96x96."""
    package, cls = MODEL_NAME_TO_MODEL["resnet50"]
    wrapper = getattr(importlib.import_module(f"executorch.examples.models.{package}"), cls)
    module = importlib.import_module(wrapper.__module__)
    assert module.resnet50 is tv.resnet50, "the example no longer builds torchvision's resnet50"
    return (lambda: tv.resnet50(weights=None)), image(96)


def registry_model(name: str):
    """An example that builds offline: its model and its own example inputs."""
    return (lambda: example(name)[0]), (lambda: example(name)[1])


def lstm_example():
    def inputs():
        x, (h0, c0) = example("lstm")[1]
        return x, h0, c0

    return (lambda: FlatLstm(example("lstm")[0])), inputs


# name -> (source, (make_model, make_inputs))
MODELS = {
    "resnet18": ("torchvision", torchvision_model(tv.resnet18, 96)),
    "squeezenet1_1": ("torchvision", torchvision_model(tv.squeezenet1_1, 96)),
    "shufflenet_v2_x0_5": ("torchvision", torchvision_model(tv.shufflenet_v2_x0_5, 96)),
    "efficientnet_b0": ("torchvision", torchvision_model(tv.efficientnet_b0, 96)),
    "mnasnet0_5": ("torchvision", torchvision_model(tv.mnasnet0_5, 96)),
    "regnet_y_400mf": ("torchvision", torchvision_model(tv.regnet_y_400mf, 96)),
    "mobilenet_v3_large": ("torchvision", torchvision_model(tv.mobilenet_v3_large, 96)),
    "lraspp_mobilenet_v3_large": (
        "torchvision",
        (
            lambda: Segmentation(
                tv.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=8)
            ),
            image(128),
        ),
    ),
    "vit_small": ("torchvision", (small_vit, image(64))),
    "resnet50": ("executorch.examples", resnet50_example()),
    "ds_cnn": ("executorch.examples", registry_model("ds_cnn")),
    "resnet8": ("executorch.examples", registry_model("resnet8")),
    "mobilenet_v1_025": ("executorch.examples", registry_model("mobilenet_v1_025")),
    "deep_autoencoder": ("executorch.examples", registry_model("deep_autoencoder")),
    "lstm": ("executorch.examples", lstm_example()),
}


# Models also exported quantized to int8 (the ``xnnpack-q8`` variant).
QUANTIZED = {"resnet18"}


def spec_for(name: str, quantized: bool = False, channels_last: bool = False) -> OpFixture:
    make_model, make_inputs = MODELS[name][1]
    inputs = {}

    def model():
        inputs["case"] = make_inputs()
        eager = calibrated(make_model(), inputs["case"])
        if channels_last:
            # As a user exporting for channels-last kernels does: the model's
            # parameters and its image inputs in that memory format.
            inputs["case"] = tuple(
                x.contiguous(memory_format=torch.channels_last) if x.dim() == 4 else x for x in inputs["case"]
            )
            eager = eager.to(memory_format=torch.channels_last)
        return quantize_q8(eager, inputs["case"]) if quantized else eager

    return OpFixture(name, name, MODELS[name][0], model, lambda: [inputs["case"]])


def executorch_error(data: bytes) -> float:
    """ExecuTorch's largest error on a bundled program's test cases."""
    bundled = deserialize_from_flatbuffer_to_bundled_program(data)
    suite = bundled.method_test_suites[0]
    method = Runtime.get().load_program(bytes(bundled.program)).load_method(suite.method_name)
    worst = 0.0
    for case in suite.test_cases:
        inputs = [tensor(v) for v in case.inputs]
        for got, want in zip(method.execute(inputs), case.expected_outputs):
            worst = max(worst, (got.double() - tensor(want).to(got.dtype).double()).abs().max().item())
    return worst


DTYPES = {4: torch.int64, 6: torch.float32, 11: torch.bool}


def tensor(value) -> torch.Tensor:
    """A bundled program's tensor value as a torch tensor."""
    t = value.val
    return torch.frombuffer(bytearray(bytes(t.data)), dtype=DTYPES[int(t.scalar_type)]).reshape(list(t.sizes))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir", nargs="?", type=Path, default=DEFAULT_OUT_DIR)
    parser.add_argument("--only", nargs="+", choices=sorted(MODELS), help="export only these models")
    parser.add_argument(
        "--variants", nargs="+", choices=[*PARTITIONERS, "xnnpack-q8"], help="export only these variants"
    )
    parser.add_argument(
        "--channels-last",
        action="store_true",
        help="export the models and their image inputs in channels-last memory format "
        "(files <model>.<variant>-cl.bpte)",
    )
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    index_path = args.out_dir / "index.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {}
    failed = []
    for name in args.only or MODELS:
        variants = [(variant, partitioner, False) for variant, partitioner in PARTITIONERS.items()]
        if name in QUANTIZED:
            variants.append(("xnnpack-q8", PARTITIONERS["xnnpack"], True))
        for variant, partitioner, quantized in variants:
            if args.variants and variant not in args.variants:
                continue
            spec = spec_for(name, quantized, args.channels_last)
            file = f"{name}.{variant}{'-cl' if args.channels_last else ''}.bpte"
            try:
                data, cases, outputs, operators = export_bundled(spec, partitioner(), "real-models")
            except Exception as error:  # an export ExecuTorch itself refuses: report, go on
                traceback.print_exc()
                failed.append(f"{file}: {type(error).__name__}: {str(error)[:300]}")
                index.pop(file, None)
                continue
            (args.out_dir / file).write_bytes(data)
            entry = {
                "model": name,
                "source": MODELS[name][0],
                "variant": variant,
                "inputs": [list(t.shape) for t in cases[0]],
                "outputs": [list(t.shape) for t in outputs],
                "bytes": len(data),
                "kernel_operators": operators,
            }
            if variant != "vulkan":
                try:
                    entry["executorch_error"] = executorch_error(data)
                except RuntimeError as error:  # ExecuTorch's runtime refuses the program
                    entry["executorch_error"] = f"ExecuTorch fails: {str(error)[:200]}"
            index[file] = entry
            print(f"wrote {file}: {entry}", flush=True)
            index_path.write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
    for line in failed:
        print("export failed:", line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
