/* convolution_backward for conv1d/conv2d (conv1d as a conv2d of height
 * 1), direct loops in opmath (f32 for f16/bf16/f32, f64 for f64):
 *   grad_input[n, c, ih, iw]  = sum grad[n, o, oh, ow] * weight[o, c', kh, kw]
 *   grad_weight[o, c', kh, kw] = sum grad[n, o, oh, ow] * input[n, c, ih, iw]
 *   grad_bias[o]               = sum grad[n, o, oh, ow]
 * over ih = oh * stride - padding + kh * dilation (and the same for w),
 * within each group.  Argument layout: convolution_backward (grad_output,
 * input, weight, ints stride, ints padding, ints dilation, int groups,
 * bool has_bias); outputs grad_input (input's dtype), grad_weight
 * (weight's dtype), grad_bias (grad's dtype) when has_bias. */
#include "grad/kernels.h"

#include <stdlib.h>

struct conv_shape {
	int64_t batch, channels, height, width;
	int64_t out_channels, kernel_h, kernel_w, out_h, out_w;
	int64_t stride[2], padding[2], dilation[2], groups;
};

#define DEFINE_CONV_BACKWARD(name, T)                                        \
	static void name(const struct conv_shape *s, const T *g, const T *x, \
			 const T *w, T *gx, T *gw, T *gb)                    \
	{                                                                    \
		int64_t cg = s->channels / s->groups;                        \
		int64_t og = s->out_channels / s->groups;                    \
		for (int64_t n = 0; n < s->batch; n++)                       \
		for (int64_t o = 0; o < s->out_channels; o++) {              \
			int64_t group = o / og;                              \
			const T *go = g + (n * s->out_channels + o) *        \
						  s->out_h * s->out_w;       \
			for (int64_t p = 0; p < s->out_h * s->out_w; p++)    \
				gb[o] += go[p];                              \
			for (int64_t c = 0; c < cg; c++) {                   \
				int64_t ci = group * cg + c;                 \
				const T *xc = x + (n * s->channels + ci) *   \
							  s->height * s->width; \
				T *gxc = gx + (n * s->channels + ci) *       \
						      s->height * s->width;  \
				const T *wk = w + (o * cg + c) * s->kernel_h * \
							  s->kernel_w;       \
				T *gwk = gw + (o * cg + c) * s->kernel_h *   \
						      s->kernel_w;           \
				for (int64_t kh = 0; kh < s->kernel_h; kh++) \
				for (int64_t kw = 0; kw < s->kernel_w; kw++) { \
					T wv = wk[kh * s->kernel_w + kw];    \
					T acc = 0;                           \
					for (int64_t oh = 0; oh < s->out_h; oh++) { \
						int64_t ih = oh * s->stride[0] - \
							     s->padding[0] + \
							     kh * s->dilation[0]; \
						if (ih < 0 || ih >= s->height) \
							continue;            \
						for (int64_t ow = 0; ow < s->out_w; ow++) { \
							int64_t iw = ow * s->stride[1] - \
								     s->padding[1] + \
								     kw * s->dilation[1]; \
							if (iw < 0 || iw >= s->width) \
								continue;    \
							T gv = go[oh * s->out_w + ow]; \
							acc += gv * xc[ih * s->width + iw]; \
							gxc[ih * s->width + iw] += gv * wv; \
						}                            \
					}                                    \
					gwk[kh * s->kernel_w + kw] += acc;   \
				}                                            \
			}                                                    \
		}                                                            \
	}

DEFINE_CONV_BACKWARD(conv_backward_f32, float)
DEFINE_CONV_BACKWARD(conv_backward_f64, double)

static int conv_shape_of(const struct amp_call *call, struct conv_shape *s,
			 bool *batched)
{
	const struct amp_tensor *grad = cpu_arg_tensor(call, 0);
	const struct amp_tensor *input = cpu_arg_tensor(call, 1);
	const struct amp_tensor *weight = cpu_arg_tensor(call, 2);
	int dims = weight->ndim - 2;

	if (dims < 1 || dims > 2 ||
	    (input->ndim != dims + 1 && input->ndim != dims + 2) ||
	    grad->ndim != input->ndim)
		return amp_error(AMP_ERR_INVALID,
				 "convolution_backward: unexpected input, "
				 "weight or grad_output dimensions");
	*batched = input->ndim == dims + 2;
	int lead = *batched ? 1 : 0;
	s->batch = *batched ? input->shape[0] : 1;
	s->channels = input->shape[lead];
	s->height = dims == 2 ? input->shape[lead + 1] : 1;
	s->width = input->shape[input->ndim - 1];
	s->out_channels = weight->shape[0];
	s->kernel_h = dims == 2 ? weight->shape[2] : 1;
	s->kernel_w = weight->shape[weight->ndim - 1];
	s->out_h = dims == 2 ? grad->shape[lead + 1] : 1;
	s->out_w = grad->shape[grad->ndim - 1];
	s->groups = call->args[6].i;
	for (int i = 0; i < 2; i++) {
		int from = i - (2 - dims);
		s->stride[i] = from >= 0 ? call->args[3].ints.v[from] : 1;
		s->padding[i] = from >= 0 ? call->args[4].ints.v[from] : 0;
		s->dilation[i] = from >= 0 ? call->args[5].ints.v[from] : 1;
	}
	if (s->groups <= 0 || s->channels % s->groups ||
	    s->out_channels % s->groups ||
	    grad->shape[lead] != s->out_channels ||
	    weight->shape[1] * s->groups != s->channels)
		return amp_error(AMP_ERR_INVALID,
				 "convolution_backward: channels and groups do "
				 "not match");
	return AMP_OK;
}

int amp_forward_convolution_backward(struct amp_call *call)
{
	struct amp_tensor *grad = cpu_arg_tensor(call, 0);
	struct amp_tensor *input = cpu_arg_tensor(call, 1);
	struct amp_tensor *weight = cpu_arg_tensor(call, 2);
	bool has_bias = call->args[7].b;
	struct conv_shape s;
	bool batched;
	enum amp_dtype common;
	struct amp_tensor *operands[3] = { grad, input, weight };
	int status = grad_float_result("convolution_backward", 3, operands,
				       &common);

	if (status == AMP_OK)
		status = conv_shape_of(call, &s, &batched);
	if (status != AMP_OK)
		return cpu_error_with(status, input, weight);
	enum amp_dtype opmath = cpu_opmath(common);
	size_t size = amp_dtype_size(opmath);
	void *owned[3] = { 0 };
	const void *g = cpu_load(grad, grad->dtype, opmath, &owned[0]);
	const void *x = cpu_load(input, input->dtype, opmath, &owned[1]);
	const void *w = cpu_load(weight, weight->dtype, opmath, &owned[2]);
	void *gx = calloc((size_t)amp_tensor_numel(input) + 1, size);
	void *gw = calloc((size_t)amp_tensor_numel(weight) + 1, size);
	void *gb = calloc((size_t)s.out_channels + 1, size);
	if (g && x && w && gx && gw && gb) {
		if (opmath == AMP_DTYPE_F32)
			conv_backward_f32(&s, g, x, w, gx, gw, gb);
		else
			conv_backward_f64(&s, g, x, w, gx, gw, gb);
		status = grad_output_from(call, 0, input->ndim, input->shape,
					  input->dtype, input->device, gx,
					  opmath);
		if (status == AMP_OK)
			status = grad_output_from(call, 1, weight->ndim,
						  weight->shape, weight->dtype,
						  weight->device, gw, opmath);
		if (status == AMP_OK && has_bias)
			status = grad_output_from(call, 2, 1, &s.out_channels,
						  grad->dtype, grad->device, gb,
						  opmath);
	} else {
		status = amp_error(AMP_ERR_NOMEM,
				   "out of memory in convolution_backward");
	}
	for (int i = 0; i < 3; i++)
		free(owned[i]);
	free(gx);
	free(gw);
	free(gb);
	return grad_outputs_drop_on_error(call, status);
}
