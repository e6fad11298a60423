// Mirrors ATen/native/cuda/BinaryMulKernel.cu (complex mul) and UnaryComplexKernels.cu (conj): see
// kernels/cuda/complex.h.
#include "kernels/cuda/complex.h"

#include "kernels/cuda/loops.cuh"

namespace remat::kernels::cuda {

namespace {

// c10::complex<T>'s layout: real, then imaginary, aligned to their pair.
template <class T>
struct alignas(2 * sizeof(T)) Complex {
  T re, im;
};

template <class T>
struct ComplexMulFunctor {
  __device__ __forceinline__ Complex<T> operator()(Complex<T> a, Complex<T> b) const {
    return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
  }
};

template <class T>
struct ConjFunctor {
  __device__ __forceinline__ Complex<T> operator()(Complex<T> a) const { return {a.re, -a.im}; }
};

}  // namespace

void complex_mul(ScalarType dtype, const StridedLoop& loop, void* out, const void* a, const void* b,
                 cudaStream_t stream) {
  if (dtype == kComplexFloat) {
    launch_elementwise<Complex<float>, Complex<float>, Complex<float>>(loop, out, {a, b}, ComplexMulFunctor<float>{},
                                                                       stream);
  } else if (dtype == kComplexDouble) {
    launch_elementwise<Complex<double>, Complex<double>, Complex<double>>(loop, out, {a, b},
                                                                          ComplexMulFunctor<double>{}, stream);
  } else {
    REMAT_CUDA_DTYPE_ERROR(dtype, "aten::mul (complex)");
  }
}

void complex_conj(ScalarType dtype, const StridedLoop& loop, void* out, const void* in, cudaStream_t stream) {
  if (dtype == kComplexFloat) {
    launch_elementwise<Complex<float>, Complex<float>>(loop, out, {in}, ConjFunctor<float>{}, stream);
  } else if (dtype == kComplexDouble) {
    launch_elementwise<Complex<double>, Complex<double>>(loop, out, {in}, ConjFunctor<double>{}, stream);
  } else {
    REMAT_CUDA_DTYPE_ERROR(dtype, "aten::conj_physical");
  }
}

}  // namespace remat::kernels::cuda
