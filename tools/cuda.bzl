"""cuda_library(): .cu files compiled by nvcc, linked through a cc_library.

Usage (BUILD):

    load("//tools:cuda.bzl", "cuda_library")

    cuda_library(
        name = "cuda_kernels",
        srcs = ["matmul.cu", "launch.cc"],   # .cu -> nvcc; others -> host cc
        hdrs = ["matmul.h"],
        deps = ["//engine:tensor"],          # headers visible to nvcc, too
    )

Under --config=cuda (--define=cuda=true):
  * each .cu in srcs is compiled by /usr/local/cuda/bin/nvcc into a .o
    (-std=c++17 -O3, sm_90 SASS + compute_90 PTX, --expt-relaxed-constexpr,
    -Xcompiler -fPIC, -DREMAT_CUDA). Include path: the repo root (so
    `#include "kernels/cuda/foo.h"` works), bazel-bin/genfiles, the roots of
    any external headers passed in hdrs, plus the include paths/defines of
    `deps` (anything providing CcInfo, e.g. @eigen//:eigen);
  * a cc_library `name` links those objects and the non-.cu srcs, and
    depends on @cuda//:cuda (cuda_runtime.h/cublas_v2.h for host code,
    -lcudart -lcublas, rpath /usr/local/cuda/lib64).
Under --config=cuda_emu (--define=cuda_emu=true as well): each .cu is copied to a .cu.cc and
compiled by the host compiler into the same cc_library, against //kernels/cuda/emu (the emulated
device's cuda_runtime.h, cublas_v2.h, ... and its runtime) instead of @cuda//:cuda.
Without the define, `name` is an empty cc_library (only hdrs kept), so
`bazel build //...` works on machines without CUDA.

Extra nvcc flags: nvcc_copts = [...]; `copts` go to the host (.cc) compile.

link_only(): see below (how //:remat links the CUDA libraries without their headers).
"""

CUDA_ROOT = "/usr/local/cuda"
NVCC = CUDA_ROOT + "/bin/nvcc"

NVCC_FLAGS = [
    "-std=c++17",
    "-O3",
    "-gencode=arch=compute_90,code=sm_90",
    "-gencode=arch=compute_90,code=compute_90",
    "--expt-relaxed-constexpr",
    "-Xcompiler",
    "-fPIC",
    "-DREMAT_CUDA",
]

def _dedup(items):
    seen = {}
    out = []
    for x in items:
        if x not in seen:
            seen[x] = True
            out.append(x)
    return out

def _nvcc_compile_impl(ctx):
    src = ctx.file.src
    out = ctx.outputs.out

    include_dirs = [
        ".",
        ctx.bin_dir.path,
        ctx.genfiles_dir.path,
    ]
    system_dirs = []
    defines = []
    inputs = [src] + ctx.files.hdrs
    transitive = []

    # Roots of headers given directly (external repos, generated files).
    for h in ctx.files.hdrs:
        root = h.root.path
        if h.owner.workspace_root:
            root = (root + "/" if root else "") + h.owner.workspace_root
        if root:
            include_dirs.append(root)

    for dep in ctx.attr.deps:
        if CcInfo not in dep:
            continue
        cc = dep[CcInfo].compilation_context
        transitive.append(cc.headers)
        include_dirs += cc.includes.to_list() + cc.quote_includes.to_list()
        system_dirs += cc.system_includes.to_list()
        defines += cc.defines.to_list()

    args = ctx.actions.args()
    args.add_all(NVCC_FLAGS)
    args.add_all(ctx.attr.nvcc_copts)
    args.add_all(_dedup(defines), format_each = "-D%s")
    system_dirs = _dedup(system_dirs)
    args.add_all([d for d in _dedup(include_dirs) if d not in system_dirs], format_each = "-I%s")
    args.add_all(system_dirs, before_each = "-isystem")
    args.add("-c", src.path)
    args.add("-o", out.path)

    # nvcc names its intermediate files (tmpxft_<pid>_...) by its PID in TMPDIR. Sandboxed actions
    # share /tmp and can each run in a PID namespace of their own, so two nvcc at once may have the
    # same PID and overwrite each other's .ptx ("ptxas fatal: Input file ... could not be opened"):
    # each action gets a temporary directory of its own, made with mkdir's exclusive create.
    ctx.actions.run_shell(
        command = ('tmp="$(mktemp -d "${TMPDIR:-/tmp}/remat-nvcc.XXXXXXXX")" && ' +
                   'trap \'rm -rf "$tmp"\' EXIT && TMPDIR="$tmp" "%s" "$@"') % NVCC,
        arguments = [args],
        inputs = depset(inputs, transitive = transitive),
        outputs = [out],
        mnemonic = "NvccCompile",
        progress_message = "nvcc %s" % src.short_path,
        # nvcc finds its host compiler (g++) on PATH.
        use_default_shell_env = True,
    )
    return [DefaultInfo(files = depset([out]))]

_nvcc_compile = rule(
    implementation = _nvcc_compile_impl,
    attrs = {
        "src": attr.label(allow_single_file = [".cu"], mandatory = True),
        "hdrs": attr.label_list(allow_files = True),
        "deps": attr.label_list(),
        "nvcc_copts": attr.string_list(),
        "out": attr.output(mandatory = True),
    },
)

def cuda_library(name, srcs, hdrs = [], deps = [], copts = [], nvcc_copts = [], **kw):
    cu_srcs = [s for s in srcs if s.endswith(".cu")]
    host_srcs = [s for s in srcs if not s.endswith(".cu")]

    objs = []
    emu_srcs = []
    for src in cu_srcs:
        stem = src[:-len(".cu")]
        obj_target = "%s__nvcc__%s" % (name, stem.replace("/", "_"))
        _nvcc_compile(
            name = obj_target,
            src = src,
            hdrs = hdrs,
            deps = deps,
            nvcc_copts = nvcc_copts,
            out = "_nvcc/%s/%s.o" % (name, stem),
            # Only built when the cc_library below needs it (cuda config);
            # keeps `bazel build //...` from running nvcc otherwise.
            tags = ["manual"],
            visibility = ["//visibility:private"],
        )
        objs.append(":" + obj_target)

        # --config=cuda_emu: the same source as C++ for the host compiler (a copy with a .cc name,
        # since cc_library compiles only C++ extensions). `#line` makes diagnostics, debug info and
        # sanitizer reports name the .cu file itself.
        emu_target = "%s__emu__%s" % (name, stem.replace("/", "_"))
        emu_out = "_emu/%s/%s.cu.cc" % (name, stem)
        native.genrule(
            name = emu_target,
            srcs = [src],
            outs = [emu_out],
            cmd = "(echo '#line 1 \"$<\"'; cat $<) > $@",
            tags = ["manual"],
            visibility = ["//visibility:private"],
        )
        emu_srcs.append(emu_out)

    native.cc_library(
        name = name,
        srcs = select({
            "//tools:cuda_emu_enabled": emu_srcs + host_srcs,
            "//tools:cuda_enabled": objs + host_srcs,
            "//conditions:default": [],
        }),
        hdrs = hdrs,
        deps = select({
            "//tools:cuda_emu_enabled": deps + ["//kernels/cuda/emu"],
            "//tools:cuda_enabled": deps + ["@cuda//:cuda"],
            "//conditions:default": [],
        }),
        # nvcc gets -DREMAT_CUDA (NVCC_FLAGS); the emulated build gives it to the same sources.
        # `#pragma unroll` is nvcc's; the host compiler ignores it.
        local_defines = select({
            "//tools:cuda_emu_enabled": ["REMAT_CUDA"],
            "//conditions:default": [],
        }),
        copts = copts + select({
            "//tools:cuda_emu_enabled": ["-Wno-unknown-pragmas"],
            "//conditions:default": [],
        }),
        **kw
    )

def _link_only_impl(ctx):
    merged = cc_common.merge_cc_infos(cc_infos = [d[CcInfo] for d in ctx.attr.deps])
    return [CcInfo(linking_context = merged.linking_context)]

# link_only(name, deps): links deps (their objects, alwayslink flags and linkopts) into whatever
# depends on it, but passes on none of their headers, include paths or defines. //:remat uses it
# for the CUDA libraries: a target that only links CUDA code then compiles with the same command
# line and inputs as without --config=cuda, so its objects come from the cache.
link_only = rule(
    implementation = _link_only_impl,
    attrs = {"deps": attr.label_list(providers = [CcInfo])},
)
