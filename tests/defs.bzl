"""remat_tests(srcs): one cc_test per tests/<path>/<name>_test.cpp, named <path>/<name>."""

def remat_tests(srcs, deps = []):
    for src in srcs:
        name = src[:-len(".cpp")]
        native.cc_test(
            name = name,
            srcs = [src] + native.glob(["testing/*.h"]),
            deps = ["//:remat", "@catch2//:catch2_main", "@catch2//:catch2"] + deps,
            size = "medium",
        )
