#pragma once
// The one oneDNN convolution setup (window, grouped weights, the forward and
// backward descriptors) that the float convolution (imported and trained)
// and the integer one (tandem.QConv) share.
#include <dnnl.hpp>

#include "cpu/dnnl_utils.h"
#include "ops/conv.h"

namespace tandem::cpu {

struct DnnlConv {
  DnnlWindow window;
  // [M, C/G, K...], seen by oneDNN as [G, M/G, C/G, K...] when grouped: the
  // same bytes, so a plain weight tensor is read as it is.
  dnnl::memory::dims weights;
  int64_t out_channels = 0;

  // An imported Conv (1-3 spatial dims) with weights `w` [M, C/G, K...].
  static DnnlConv of(const ops::ConvGeometry& g, const Shape& w) {
    DnnlConv c{dnnl_window(g.window), dnnl::memory::dims(w.begin(), w.end()), g.out_channels};
    if (g.group > 1) {
      c.weights[0] = w[0] / g.group;
      c.weights.insert(c.weights.begin(), g.group);
    }
    return c;
  }
  // Training's 2-D conv with weights `w` [M, C/G, KH, KW].
  static DnnlConv of(const ops::Conv2dParams& p, const Shape& w) {
    ops::ConvGeometry g;
    g.out_channels = w[0];
    g.group = p.groups;
    DnnlConv c = of(g, w);
    const int64_t kernel[2] = {w[2], w[3]};
    c.window = dnnl_window_2d(kernel, p.stride, p.padding, p.dilation);
    return c;
  }

  // The weights in the layout the primitive chooses (format_tag::any), or
  // plain (row-major in the grouped view).
  dnnl::memory::desc weights_md(dnnl::memory::data_type t, bool any) const {
    if (any) return dnnl::memory::desc(weights, t, dnnl::memory::format_tag::any);
    dnnl::memory::dims strides(weights.size(), 1);
    for (size_t i = weights.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * weights[i];
    return dnnl::memory::desc(weights, t, strides);
  }
  dnnl::memory::desc bias_md(dnnl::memory::data_type t) const {
    return dnnl::memory::desc({out_channels}, t, dnnl::memory::format_tag::x);
  }

  // A zero `bias` descriptor: no bias.
  dnnl::convolution_forward::desc forward(dnnl::prop_kind prop, dnnl::algorithm alg,
                                          const dnnl::memory::desc& src,
                                          const dnnl::memory::desc& wei,
                                          const dnnl::memory::desc& bias,
                                          const dnnl::memory::desc& dst) const {
    const DnnlWindow& w = window;
    if (bias) return {prop, alg, src, wei, bias, dst, w.strides, w.dilates, w.pad_l, w.pad_r};
    return {prop, alg, src, wei, dst, w.strides, w.dilates, w.pad_l, w.pad_r};
  }
  dnnl::convolution_backward_data::desc backward_data(dnnl::algorithm alg,
                                                      const dnnl::memory::desc& diff_src,
                                                      const dnnl::memory::desc& wei,
                                                      const dnnl::memory::desc& diff_dst) const {
    const DnnlWindow& w = window;
    return {alg, diff_src, wei, diff_dst, w.strides, w.dilates, w.pad_l, w.pad_r};
  }
  dnnl::convolution_backward_weights::desc backward_weights(
      dnnl::algorithm alg, const dnnl::memory::desc& src, const dnnl::memory::desc& diff_wei,
      const dnnl::memory::desc& diff_bias, const dnnl::memory::desc& diff_dst) const {
    const DnnlWindow& w = window;
    if (diff_bias)
      return {alg, src, diff_wei, diff_bias, diff_dst, w.strides, w.dilates, w.pad_l, w.pad_r};
    return {alg, src, diff_wei, diff_dst, w.strides, w.dilates, w.pad_l, w.pad_r};
  }
};

}  // namespace tandem::cpu
