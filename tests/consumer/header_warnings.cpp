// A user's translation unit that includes remat.h from an install prefix (no PyTorch counterpart):
// tools/consumer_check.sh compiles it with -Wall -Wextra -Werror, so remat's public headers push
// no warning onto a program that uses them.
#include "remat.h"

int main() { return remat::version()[0] == '\0'; }
