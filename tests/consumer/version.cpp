// An outside program's version check (no PyTorch counterpart): the version find_package or
// pkg-config found (REMAT_PACKAGE_VERSION), the headers' (REMAT_VERSION) and the library's
// (remat::version()) must be one; tools/consumer_check.sh builds and runs it.
#include <cstdio>
#include <cstring>

#include "remat.h"

int main() {
  std::printf("package %s  headers %s  library %s\n", REMAT_PACKAGE_VERSION, REMAT_VERSION, remat::version());
  return std::strcmp(REMAT_PACKAGE_VERSION, REMAT_VERSION) == 0 && std::strcmp(REMAT_VERSION, remat::version()) == 0
             ? 0
             : 1;
}
