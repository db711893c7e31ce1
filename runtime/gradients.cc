// Single-device reference gradients and their comparison with a pipelined run's.
#include "pipelab/runtime/gradients.h"

#include <cmath>
#include <limits>
#include <string>

#include "pipelab/base/error.h"
#include "pipelab/kernels/data.h"
#include "pipelab/kernels/stage.h"

namespace pipelab::runtime {

PartGradients reference_gradients(const ModelConfig& model, int parts, int microbatches) {
  model.validate();
  if (parts < 1 || microbatches < 1) throw InputError("reference_gradients: parts and microbatches must be >= 1");
  const int L = model.layers_per_stage;
  kernels::StageModel whole(model.block, 0, parts * L, model.seed);
  const double scale = 1.0 / static_cast<double>(microbatches);
  std::vector<float> act(static_cast<std::size_t>(model.block.activation_elems()));
  for (int mb = 0; mb < microbatches; ++mb) {
    const std::vector<float> x = kernels::synthetic_input<float>(model.block, mb, model.seed);
    const std::vector<float> target = kernels::synthetic_target<float>(model.block, mb, model.seed);
    kernels::StageSaved saved;
    whole.forward(x, act, saved);
    kernels::LossAndGrad<float> loss = kernels::mse_loss(act, target, scale);
    whole.backward(std::move(saved), loss.dout, act);
  }
  PartGradients out(static_cast<std::size_t>(parts));
  for (int p = 0; p < parts; ++p) {
    for (int l = 0; l < L; ++l) out[static_cast<std::size_t>(p)].push_back(whole.grads()[static_cast<std::size_t>(p * L + l)]);
  }
  return out;
}

PartGradients part_gradients(const PipelineShape& shape, const std::vector<std::vector<kernels::BlockGrads>>& stage_grads) {
  PartGradients parts(static_cast<std::size_t>(shape.stages_per_chain()));
  for (int s = 0; s < shape.stages && static_cast<std::size_t>(s) < stage_grads.size(); ++s) {
    const auto& g = stage_grads[static_cast<std::size_t>(s)];
    auto& part = parts[static_cast<std::size_t>(shape.part_of_stage(s))];
    if (part.empty()) {
      part = g;
      continue;
    }
    if (part.size() != g.size()) throw InputError("part_gradients: stages of one part hold different layer counts");
    for (std::size_t l = 0; l < g.size(); ++l) {
      auto dst = part[l].tensors();
      const auto src = g[l].tensors();
      if (dst.size() != src.size()) throw InputError("part_gradients: layer tensors differ between copies of a part");
      for (std::size_t t = 0; t < dst.size(); ++t) {
        if (dst[t].data.size() != src[t].data.size()) throw InputError("part_gradients: tensor sizes differ between copies of a part");
        for (std::size_t i = 0; i < dst[t].data.size(); ++i) dst[t].data[i] += src[t].data[i];
      }
    }
  }
  return parts;
}

GradientCheck compare_gradients(const PartGradients& actual, const PartGradients& reference, double tolerance) {
  GradientCheck c;
  c.tolerance = tolerance;
  const double inf = std::numeric_limits<double>::infinity();
  auto fail = [&](const std::string& what) {
    c.max_rel_error = inf;
    c.worst = what;
    c.passed = false;
    return c;
  };
  if (actual.size() != reference.size()) return fail("part count " + std::to_string(actual.size()) + " != " + std::to_string(reference.size()));
  for (std::size_t p = 0; p < reference.size(); ++p) {
    if (actual[p].size() != reference[p].size()) return fail("part " + std::to_string(p) + ": missing layers");
    for (std::size_t l = 0; l < reference[p].size(); ++l) {
      const auto a = actual[p][l].tensors();
      const auto r = reference[p][l].tensors();
      if (a.size() != r.size()) return fail("part " + std::to_string(p) + " layer " + std::to_string(l) + ": tensor count differs");
      for (std::size_t t = 0; t < r.size(); ++t) {
        const std::string name = "part " + std::to_string(p) + " layer " + std::to_string(l) + " " + std::string(r[t].name);
        if (a[t].data.size() != r[t].data.size()) return fail(name + ": size differs");
        double max_diff = 0, max_ref = 0;
        for (std::size_t i = 0; i < r[t].data.size(); ++i) {
          const double d = std::abs(static_cast<double>(a[t].data[i]) - static_cast<double>(r[t].data[i]));
          if (!(d <= max_diff)) max_diff = std::isnan(d) ? inf : d;
          max_ref = std::max(max_ref, std::abs(static_cast<double>(r[t].data[i])));
        }
        const double rel = max_ref > 0 ? max_diff / max_ref : (max_diff > 0 ? inf : 0.0);
        if (rel > c.max_rel_error || c.worst.empty()) {
          if (rel >= c.max_rel_error) {
            c.max_rel_error = rel;
            c.worst = name;
          }
        }
      }
    }
  }
  c.passed = c.max_rel_error <= tolerance;
  return c;
}

}  // namespace pipelab::runtime
