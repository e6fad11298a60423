"""remat_tests(srcs): one cc_test per tests/<path>/<name>_test.cpp, named <path>/<name>.

remat_tests(..., cuda_macro = [src, ...]): those sources are compiled with -DREMAT_CUDA under
--config=cuda (they test what changes in a CUDA build). No other CPU test gets the macro, so under
--config=cuda every other test object has the plain build's command line and comes from the cache.

remat_cuda_tests(srcs): the same for tests of CUDA code (tests/**/cuda/**). Their sources are
compiled only under --config=cuda; without it each target is an empty Catch2 binary ("No tests
ran"), so `bazel test //...` works in both configurations. Under --config=cuda_emu they run on
the emulated device; under --config=cuda without a GPU each case fails (REMAT_REQUIRE_CUDA_DEVICE):
a case that could not run is never counted as passed.
"""

# The CUDA libraries whose headers CUDA tests include (//:remat only links them).
_CUDA_LIBS = [
    "//engine/cuda",
    "//kernels/cuda",
    "//ops/cuda",
    "//tools:cuda_libs",
]

# Test sources compile at -O1: about a third faster than -opt's -O2 (CI compiles ~100 of them in
# two configurations); the library they test keeps -O2. Under --config=asan at -O0: instrumented
# Catch2 code compiles about 40% faster there, and a test's own code is a small share of its run
# time (the library stays at the sanitizer config's -O1).
_TEST_COPTS = select({
    "//tools:asan_enabled": ["-O0"],
    "//conditions:default": ["-O1"],
})

def remat_tests(srcs, deps = [], cuda_macro = [], size = "medium", data = []):
    for src in srcs:
        name = src[:-len(".cpp")]
        native.cc_test(
            name = name,
            srcs = [src] + native.glob(["testing/*.h"]),
            copts = _TEST_COPTS,
            deps = ["//:remat", "@catch2//:catch2_main", "@catch2//:catch2"] + deps,
            data = data,
            local_defines = select({
                "//tools:cuda_enabled": ["REMAT_CUDA"],
                "//conditions:default": [],
            }) if src in cuda_macro else [],
            size = size,
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
            copts = _TEST_COPTS,
            deps = ["@catch2//:catch2_main"] + select({
                "//tools:cuda_enabled": ["//:remat", "@catch2//:catch2"] + _CUDA_LIBS + deps,
                "//conditions:default": [],
            }),
            size = "medium",
            tags = ["cuda"],
        )

def remat_cuda_emu_tests(srcs, deps = []):
    """Tests of the emulated device (tests/**/cuda/emu/): compiled only under --config=cuda_emu."""
    for src in srcs:
        name = src[:-len(".cpp")]
        native.cc_test(
            name = name,
            srcs = select({
                "//tools:cuda_emu_enabled": [src] + native.glob(["testing/*.h"]),
                "//conditions:default": [],
            }),
            copts = _TEST_COPTS,
            deps = ["@catch2//:catch2_main"] + select({
                "//tools:cuda_emu_enabled": [
                    "//:remat",
                    "@catch2//:catch2",
                    "//engine/cuda/emu",
                    "//kernels/cuda/emu",
                ] + _CUDA_LIBS + deps,
                "//conditions:default": [],
            }),
            size = "medium",
            tags = ["cuda"],
        )

def doc_code_test(name, src, doc, generator, generated, data = [], deps = []):
    """A test of a document's code: `generator DOC OUT.cpp` writes C++ from the document (its code
    blocks, its names), compiled into the test `name` beside `src`; the document is in its data."""
    native.genrule(
        name = name.replace("/", "_") + "_src",
        srcs = [doc],
        outs = [generated],
        cmd = "$(location %s) $(location %s) $@" % (generator, doc),
        tools = [generator],
    )
    native.cc_test(
        name = name,
        srcs = [src, ":" + name.replace("/", "_") + "_src"] + ["docs/doc_code.h"],
        copts = _TEST_COPTS,
        data = [doc] + data,
        deps = ["//:remat", "@catch2//:catch2_main", "@catch2//:catch2"] + deps,
    )
