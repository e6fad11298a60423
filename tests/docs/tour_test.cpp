// Tests docs/tour.md's C++ (no PyTorch counterpart): the checks of tests/docs/doc_code.h, over
// the tour's ```cpp blocks (tools/readme_blocks.cpp turned them into this test's second source).
#include "tests/docs/doc_code.h"
