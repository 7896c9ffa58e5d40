// A model file: a model's parameter tensors in forward order, each with
// the forward FLOPs per sample of its module, as scripts/model_from_torch.py
// writes them for any torchvision model. A training workload names one
// where it names a built-in profile ("model": "models/resnet50.json",
// `gradex train --profile models/resnet50.json`) and it is emulated,
// bucketed and exchanged the same way, one layer per tensor.
//
//   {"name": "resnet50", "input": "one 3x224x224 sample", "source": "...",
//    "ddp_buckets": [[160, 159], [158, ...], ...],
//    "layers": [{"name": "conv1.weight", "params": 9408,
//                "forward_flops": 236027904}, ...]}
//
// "ddp_buckets" (optional) is torch DDP's own bucket assignment of the
// tensors at its default caps, which the script asks torch for: the reader
// checks its form and the tests check gradex's buckets against it.
#pragma once

#include <string>

#include "train/profiles.h"

namespace gradex {

// A model name that is a model file's path (it ends in ".json").
bool is_model_file(const std::string& model);

// Reads strictly (unknown keys and wrong types are errors naming the file
// and the JSON pointer): at least one layer, every layer a name, at least
// one parameter and non-negative FLOPs, and some FLOPs in all.
ModelProfile read_model_file(const std::string& path);

}  // namespace gradex
