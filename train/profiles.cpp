#include "train/profiles.h"

#include "common/errors.h"
#include "train/model_file.h"

namespace gradex {

double ModelProfile::params() const {
  double s = 0;
  for (const auto& l : layers) s += l.params;
  return s;
}

double ModelProfile::forward_flops() const {
  double s = 0;
  for (const auto& l : layers) s += l.forward_flops;
  return s;
}

namespace {

// prefix + number, appended (GCC 12 warns falsely on "literal" + std::string).
std::string numbered(const char* prefix, int n) {
  return std::string(prefix).append(std::to_string(n));
}

// A k x k convolution (with bias when `bias`) producing an out_hw x out_hw
// map: 2 FLOPs per multiply-add.
LayerProfile conv(const std::string& name, int k, int cin, int cout, int out_hw, bool bias) {
  const double macs = double(k) * k * cin * cout * out_hw * out_hw;
  return {name, double(k) * k * cin * cout + (bias ? cout : 0), 2 * macs};
}

void add(LayerProfile& into, const LayerProfile& part) {
  into.params += part.params;
  into.forward_flops += part.forward_flops;
}

// torchvision's ResNet-50 (v1.5: stride on the 3x3), batch norm counted as
// its two affine parameters per channel; one table entry per bottleneck.
ModelProfile resnet50() {
  ModelProfile m{"resnet50", "224x224 image", {}};
  LayerProfile stem = conv("conv1", 7, 3, 64, 112, false);
  stem.params += 2 * 64;  // bn1
  m.layers.push_back(stem);
  const int blocks[] = {3, 4, 6, 3};
  const int widths[] = {64, 128, 256, 512};
  const int spatial[] = {56, 28, 14, 7};
  int in = 64;
  int in_hw = 56;  // after the max pool
  for (int s = 0; s < 4; ++s) {
    const int w = widths[s], out = 4 * w, hw = spatial[s];
    for (int b = 0; b < blocks[s]; ++b) {
      LayerProfile l{numbered("layer", s + 1).append(".").append(std::to_string(b)), 0, 0};
      add(l, conv("", 1, in, w, b == 0 ? in_hw : hw, false));
      add(l, conv("", 3, w, w, hw, false));
      add(l, conv("", 1, w, out, hw, false));
      l.params += 2.0 * (w + w + out);
      if (b == 0) {
        add(l, conv("", 1, in, out, hw, false));  // downsample
        l.params += 2.0 * out;
      }
      m.layers.push_back(l);
      in = out;
    }
    in_hw = hw;
  }
  m.layers.push_back({"fc", 2048.0 * 1000 + 1000, 2.0 * 2048 * 1000});
  return m;
}

ModelProfile vgg16() {
  ModelProfile m{"vgg16", "224x224 image", {}};
  struct C { int cin, cout, hw; };
  const C convs[] = {{3, 64, 224},   {64, 64, 224},  {64, 128, 112}, {128, 128, 112},
                     {128, 256, 56}, {256, 256, 56}, {256, 256, 56}, {256, 512, 28},
                     {512, 512, 28}, {512, 512, 28}, {512, 512, 14}, {512, 512, 14},
                     {512, 512, 14}};
  int i = 0;
  for (const C& c : convs) m.layers.push_back(conv(numbered("conv", ++i), 3, c.cin, c.cout, c.hw, true));
  const double fcs[][2] = {{25088, 4096}, {4096, 4096}, {4096, 1000}};
  for (int f = 0; f < 3; ++f) {
    m.layers.push_back({numbered("fc", 6 + f), fcs[f][0] * fcs[f][1] + fcs[f][1],
                        2 * fcs[f][0] * fcs[f][1]});
  }
  return m;
}

// One transformer block of width d, FFN width 4d, over `seq` tokens:
// Q, K, V and output projections, two layer norms, the FFN, and attention's
// score and weighted-sum products (2 seq^2 d multiply-adds).
LayerProfile transformer_block(const std::string& name, double d, double seq) {
  const double linear = 4 * (d * d + d) + (d * 4 * d + 4 * d) + (4 * d * d + d);
  LayerProfile l{name, linear + 2 * 2 * d, 0};
  l.forward_flops = 2 * (4 * d * d + 8 * d * d) * seq + 2 * 2 * seq * seq * d;
  return l;
}

ModelProfile bert_base() {
  const double d = 768, seq = 128;
  ModelProfile m{"bert_base", "sequence of 128 tokens", {}};
  m.layers.push_back({"embeddings", (30522 + 512 + 2) * d + 2 * d, 0});
  for (int i = 0; i < 12; ++i) m.layers.push_back(transformer_block(numbered("layer", i), d, seq));
  m.layers.push_back({"pooler", d * d + d, 2 * d * d});
  return m;
}

ModelProfile gpt2_small() {
  const double d = 768, seq = 1024, vocab = 50257;
  ModelProfile m{"gpt2_small", "sequence of 1024 tokens", {}};
  m.layers.push_back({"wte+wpe", vocab * d + 1024 * d, 0});
  for (int i = 0; i < 12; ++i) m.layers.push_back(transformer_block(numbered("h", i), d, seq));
  // The final layer norm, and the language-model head tied to wte (no
  // parameters of its own, but the logits' FLOPs).
  m.layers.push_back({"ln_f+lm_head", 2 * d, 2 * d * vocab * seq});
  return m;
}

}  // namespace

std::vector<std::string> model_profile_names() {
  return {"resnet50", "vgg16", "bert_base", "gpt2_small"};
}

ModelProfile model_profile(const std::string& name) {
  if (is_model_file(name)) return read_model_file(name);
  if (name == "resnet50") return resnet50();
  if (name == "vgg16") return vgg16();
  if (name == "bert_base") return bert_base();
  if (name == "gpt2_small") return gpt2_small();
  throw ConfigError("profile", "unknown model profile '" + name +
                                   "' (known: resnet50, vgg16, bert_base, gpt2_small, or a model file X.json "
                                   "from scripts/model_from_torch.py)");
}

}  // namespace gradex
