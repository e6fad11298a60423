"""remat_dependencies(): the external repositories remat's BUILD files name, for a WORKSPACE.

remat's own WORKSPACE calls it, and so does a workspace that depends on remat:

    local_repository(name = "remat", path = "/path/to/remat")
    load("@remat//tools:dependencies.bzl", "remat_dependencies")
    remat_dependencies()

and then `deps = ["@remat//:remat"]` (docs/install.md; tools/consumer_check.sh does exactly this
from a temporary workspace). Everything is local (Bazel 4.2.3, offline):

  @eigen, @catch2, @openblas, @onednn, @nlohmann_json   Debian packages under /usr/include (the
                                                        BUILD files are remat's third_party/*.BUILD)
  @cuda                                                 /usr/local/cuda, read under --config=cuda only
  @rules_cc, @remote_coverage_tools                     remat's offline stand-ins (third_party/*_stub)
  @rules_java                                           Debian's bazel-rules-java

A repository the workspace already defined before the call is left as it is (e.g. its own
@rules_cc or @eigen): remat builds against that one.
"""

def _source_folder_impl(rctx):
    # The folder holding `marker`, a file of remat's source tree, linked in as the repository.
    folder = rctx.path(rctx.attr.marker).dirname
    for child in folder.readdir():
        rctx.symlink(child, child.basename)

# local_repository() for a folder of remat's tree: a path relative to remat's root would be read
# relative to the workspace that calls remat_dependencies(), and a label is not a path.
_source_folder = repository_rule(
    implementation = _source_folder_impl,
    attrs = {"marker": attr.label(allow_single_file = True, mandatory = True)},
    local = True,
)

# Repository name -> the folder its third_party/<name>.BUILD describes.
_SYSTEM_LIBRARIES = {
    # @eigen//:eigen — `#include <Eigen/Dense>` (Debian: libeigen3-dev).
    "eigen": "/usr/include/eigen3",
    # @catch2//:catch2 — `#include <catch2/catch.hpp>` (Debian: catch2, v2).
    # @catch2//:catch2_main — precompiled CATCH_CONFIG_MAIN; link into cc_tests.
    "catch2": "/usr/include/catch2",
    # @openblas//:openblas — `#include <cblas.h>`, links the OpenMP build of OpenBLAS (Debian:
    # libopenblas-openmp-dev).
    "openblas": "/usr/include/x86_64-linux-gnu/openblas-openmp",
    # @onednn//:onednn — `#include <oneapi/dnnl/dnnl.hpp>`, links libdnnl (Debian: libdnnl-dev).
    # CPU GEMM goes through oneDNN's matmul unless --config=no_onednn (--define=onednn=false).
    "onednn": "/usr/include/oneapi/dnnl",
    # @nlohmann_json//:json — `#include <nlohmann/json.hpp>` (Debian: nlohmann-json3-dev).
    "nlohmann_json": "/usr/include/nlohmann",
    # @cuda//:cuda_headers, @cuda//:cuda — CUDA toolkit at /usr/local/cuda. Only referenced under
    # --config=cuda (--define=cuda=true; see tools/cuda.bzl), so machines without CUDA never
    # touch it.
    "cuda": "/usr/local/cuda",
}

def _maybe(repo_rule, name, **kwargs):
    if not native.existing_rule(name):
        repo_rule(name = name, **kwargs)

def remat_dependencies():
    """Defines every external repository remat needs that is not defined yet."""

    # --- Bazel's own infrastructure (offline stand-ins) ---------------------------------------
    # @bazel_tools loads @rules_cc//cc:defs.bzl; Debian's bazel-rules-cc is too new for Bazel
    # 4.2.3, so a stub that forwards to the native C++ rules.
    _maybe(_source_folder, "rules_cc", marker = Label("//third_party/rules_cc_stub:WORKSPACE"))

    # Normally downloaded for `bazel coverage`/test actions; stubbed out.
    _maybe(
        _source_folder,
        "remote_coverage_tools",
        marker = Label("//third_party/remote_coverage_tools_stub:WORKSPACE"),
    )

    # Bazel's JDK toolchain registration needs @rules_java even for C++ builds (Debian:
    # bazel-rules-java).
    _maybe(native.local_repository, "rules_java", path = "/usr/share/bazel/rules/java")

    # --- System libraries: third_party/<name>.BUILD over a folder of the system's --------------
    for name, path in _SYSTEM_LIBRARIES.items():
        _maybe(
            native.new_local_repository,
            name,
            build_file = str(Label("//third_party:%s.BUILD" % name)),
            path = path,
        )
