// Tests bench/activation_model.h: the activation bytes derived by hand from what each op saves
// equal a dry run's, for every strategy (two independent accounts of the same tensors).
#include "bench/activation_model.h"

#include <catch2/catch.hpp>

#include "bench/training_step.h"

using namespace remat;
using namespace remat::bench;

TEST_CASE("activation model: the derivation equals the dry run's activation bytes", "[dry_run]") {
  // batch, seq, embd, heads, vocab, layers: config A, and a small one with long sequences.
  for (const ModelShape& shape : {ModelShape{8, 128, 256, 4, 65, 4}, ModelShape{4, 64, 32, 2, 17, 3}}) {
    for (const Strategy& s : all_strategies()) {
      INFO("strategy " << s.name << ", " << shape.layers << " layers, d_model " << shape.embd);
      std::vector<StepRecord> r = run_training_steps(s, shape, Device{kMeta}, 2);
      CHECK(static_cast<double>(r[1].activation_bytes) == predicted_activation_bytes(s.name, shape));
    }
  }
}
