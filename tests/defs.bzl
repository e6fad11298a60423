"""remat_tests(srcs): one cc_test per tests/<path>/<name>_test.cpp, named <path>/<name>.

remat_cuda_tests(srcs): the same for tests of CUDA code (tests/**/cuda/**). Their sources are
compiled only under --config=cuda; without it each target is an empty Catch2 binary ("No tests
ran"), so `bazel test //...` works in both configurations. Without a GPU the tests skip at
run time.
"""

def remat_tests(srcs, deps = []):
    for src in srcs:
        name = src[:-len(".cpp")]
        native.cc_test(
            name = name,
            srcs = [src] + native.glob(["testing/*.h"]),
            deps = ["//:remat", "@catch2//:catch2_main", "@catch2//:catch2"] + deps,
            size = "medium",
        )

def remat_cuda_tests(srcs, deps = []):
    for src in srcs:
        name = src[:-len(".cpp")]
        native.cc_test(
            name = name,
            srcs = select({
                "//tools:cuda_enabled": [src] + native.glob(["testing/*.h"]),
                "//conditions:default": [],
            }),
            deps = ["@catch2//:catch2_main"] + select({
                "//tools:cuda_enabled": ["//:remat", "@catch2//:catch2", "@cuda//:cuda"] + deps,
                "//conditions:default": [],
            }),
            size = "medium",
        )
