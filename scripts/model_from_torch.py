#!/usr/bin/python3
"""Writes a gradex model file for a torchvision model.

A model file lists the model's parameter tensors in registration (forward)
order, each with its element count and the forward FLOPs per sample of the
module it belongs to (given to the module's first tensor; a bias gets 0):
what `gradex train --profile FILE` and a training scenario's
"model": "FILE" emulate, bucket and exchange as they do the built-in
profiles. "ddp_buckets" records torch DDP's own bucket assignment of the
tensors, which gradex's must equal. FLOPs are counted with forward hooks on one sample: convolutions
and linear layers 2 x multiply-adds, every other module with parameters 2
per output element (right for normalisations; a lower bound for modules
whose work is not elementwise, such as attention's fused projections).

Usage: scripts/model_from_torch.py MODEL -o FILE [--input 3x224x224]
  MODEL: a torchvision.models builder (resnet50, vgg16, vit_b_16, ...)
Needs Debian's python3-torch and python3-torchvision.
"""
import argparse
import json
import sys


def fail(message):
    print(f"model_from_torch: {message}", file=sys.stderr)
    sys.exit(2)


def module_flops(module, inputs, output):
    """Forward FLOPs of one call of `module` on a batch of one sample."""
    import torch.nn as nn
    out = output[0] if isinstance(output, (tuple, list)) else output
    if not hasattr(out, "numel"):
        return 0
    if isinstance(module, nn.Conv2d):
        kh, kw = module.kernel_size
        return 2 * out.numel() * (module.in_channels // module.groups) * kh * kw
    if isinstance(module, nn.Linear):
        return 2 * module.in_features * out.numel()
    return 2 * out.numel()


def describe(name, shape):
    import torch
    import torchvision
    builder = getattr(torchvision.models, name, None)
    if builder is None or not callable(builder):
        fail(f"torchvision {torchvision.__version__} has no model '{name}'")
    model = builder(weights=None)
    model.eval()
    flops = {}

    def hook(module, inputs, output):
        flops[module] = flops.get(module, 0) + module_flops(module, inputs, output)

    handles = [m.register_forward_hook(hook) for m in model.modules()
               if any(True for _ in m.parameters(recurse=False))]
    with torch.no_grad():
        model(torch.zeros((1,) + shape))
    for h in handles:
        h.remove()
    layers = []
    for module_name, module in model.named_modules():
        own = list(module.named_parameters(recurse=False))
        for i, (pname, p) in enumerate(own):
            layers.append({"name": f"{module_name}.{pname}" if module_name else pname,
                           "params": p.numel(),
                           "forward_flops": flops.get(module, 0) if i == 0 else 0})
    # named_modules() visits in registration order, as parameters() does.
    if [l["name"] for l in layers] != [n for n, _ in model.named_parameters()]:
        fail(f"'{name}': its modules' parameters are not in parameters() order")
    return {"name": name,
            "input": "one " + "x".join(map(str, shape)) + " sample",
            "source": f"scripts/model_from_torch.py {name} (torch {torch.__version__}, "
                      f"torchvision {torchvision.__version__})",
            "ddp_buckets": ddp_buckets([p for _, p in model.named_parameters()]),
            "layers": layers}


def ddp_buckets(params):
    """torch DDP's buckets at its defaults, as its Reducer rebuilds them once
    backward has run: tensor indices in gradient-ready order (here the
    reverse of registration, as gradex emulates backward), the first
    bucket capped at 1 MiB and the rest at bucket_cap_mb = 25 MiB. Computed
    by torch's own function, for gradex's make_buckets to be checked against."""
    import torch.distributed as dist
    if not dist.is_available():
        fail("this torch has no torch.distributed to assign DDP's buckets")
    order = list(range(len(params)))[::-1]
    buckets, _ = dist._compute_bucket_assignment_by_size(
        [params[i] for i in order], [dist._DEFAULT_FIRST_BUCKET_BYTES, 25 * 1024 * 1024],
        [False] * len(params), order)
    return [list(b) for b in buckets]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--input", default="3x224x224", help="one sample's shape")
    args = parser.parse_args()
    try:
        shape = tuple(int(x) for x in args.input.split("x"))
    except ValueError:
        fail(f"--input {args.input}: expected dimensions such as 3x224x224")
    try:
        import torch  # noqa: F401
        import torchvision  # noqa: F401
    except ImportError as e:
        fail(f"{e} (install Debian's python3-torch and python3-torchvision)")
    doc = describe(args.model, shape)
    # One tensor per line: a file a reader can scan and diff.
    head = {k: v for k, v in doc.items() if k not in ("ddp_buckets", "layers")}
    text = (json.dumps(head, indent=1)[:-2] + ',\n "ddp_buckets": [\n' + ",\n".join(
        "  " + json.dumps(b) for b in doc["ddp_buckets"]) + '\n ],\n "layers": [\n' +
        ",\n".join("  " + json.dumps(l) for l in doc["layers"]) + "\n ]\n}\n")
    try:
        with open(args.output, "w") as f:
            f.write(text)
    except OSError as e:
        fail(f"-o {args.output}: {e.strerror}")
    params = sum(l["params"] for l in doc["layers"])
    gflops = sum(l["forward_flops"] for l in doc["layers"]) / 1e9
    print(f"model_from_torch: wrote {args.output} ({len(doc['layers'])} tensors, {params} "
          f"parameters, {gflops:.2f} GFLOPs forward per sample)")


if __name__ == "__main__":
    main()
