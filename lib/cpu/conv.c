/* conv1d and conv2d: im2col + GEMM per (batch item, group), stride,
 * padding, dilation, groups and bias, computed in opmath (f16/bf16 in f32
 * like the matmuls) and rounded once.  conv1d runs as a conv2d of height
 * 1.  Shape checks and messages follow ATen's check_shape_forward; the
 * dtype check (input, weight and bias alike) comes after them, as in
 * _convolution.  Argument layout: conv1d / conv2d (input, weight, bias?,
 * ints stride, ints padding, ints dilation, int groups) */
#include "cpu_ops.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

CPU_VECTORIZE_LOOPS

struct conv_geometry {
	int64_t batch, channels, height, width;   /* input (N, C, H, W) */
	int64_t out_channels, kernel_h, kernel_w; /* weight (O, C/g, kh, kw) */
	int64_t out_h, out_w;
	int64_t stride[2], padding[2], dilation[2], groups;
};

static int conv_error(int status, const struct amp_tensor *a,
		      const struct amp_tensor *b)
{
	return cpu_error_with(status, a, b);
}

/* Spatial sizes as ATen prints them: "(8 x 8)" or "(10)". */
static const char *spatial(int dims, const int64_t *v, char *buf, size_t size)
{
	if (dims == 1)
		snprintf(buf, size, "(%" PRId64 ")", v[1]);
	else
		snprintf(buf, size, "(%" PRId64 " x %" PRId64 ")", v[0], v[1]);
	return buf;
}

/* Reads the call and checks it; `dims` is 1 or 2 spatial dimensions. */
static int conv_setup(const struct amp_call *call, int dims,
		      struct conv_geometry *g, bool *batched)
{
	const struct amp_tensor *input = cpu_arg_tensor(call, 0);
	const struct amp_tensor *weight = cpu_arg_tensor(call, 1);
	const struct amp_tensor *bias = cpu_arg_tensor(call, 2);
	char a[128], b[128], c[64], d[64];

	if (input->ndim != dims + 1 && input->ndim != dims + 2) {
		amp_error(AMP_ERR_INVALID,
			  "Expected %dD (unbatched) or %dD (batched) input to "
			  "conv%dd, but got input of size: %s",
			  dims + 1, dims + 2, dims,
			  cpu_shape_string(input->ndim, input->shape, a,
					   sizeof a));
		return conv_error(AMP_ERR_INVALID, input, NULL);
	}
	*batched = input->ndim == dims + 2;
	int lead = *batched ? 1 : 0;
	g->batch = *batched ? input->shape[0] : 1;
	g->channels = input->shape[lead];
	g->height = dims == 2 ? input->shape[lead + 1] : 1;
	g->width = input->shape[input->ndim - 1];
	g->groups = call->args[6].i;
	for (int i = 0; i < 2; i++) {
		int from = i - (2 - dims);
		g->stride[i] = from >= 0 ? call->args[3].ints.v[from] : 1;
		g->padding[i] = from >= 0 ? call->args[4].ints.v[from] : 0;
		g->dilation[i] = from >= 0 ? call->args[5].ints.v[from] : 1;
		if (g->stride[i] <= 0)
			return amp_error(AMP_ERR_INVALID,
					 "non-positive stride is not supported");
		if (g->padding[i] < 0)
			return amp_error(AMP_ERR_INVALID,
					 "negative padding is not supported");
		if (g->dilation[i] <= 0)
			return amp_error(AMP_ERR_INVALID,
					 "dilation should be greater than zero");
	}
	if (g->groups <= 0)
		return amp_error(AMP_ERR_INVALID,
				 "non-positive groups is not supported");
	if (weight->ndim != dims + 2) {
		amp_error(AMP_ERR_INVALID,
			  "Expected %d-dimensional input for %d-dimensional "
			  "weight %s, but got %d-dimensional input of size %s "
			  "instead",
			  weight->ndim, weight->ndim,
			  cpu_shape_string(weight->ndim, weight->shape, b,
					   sizeof b),
			  dims + 2,
			  cpu_shape_string(input->ndim, input->shape, a,
					   sizeof a));
		return conv_error(AMP_ERR_INVALID, input, weight);
	}
	g->out_channels = weight->shape[0];
	g->kernel_h = dims == 2 ? weight->shape[2] : 1;
	g->kernel_w = weight->shape[weight->ndim - 1];
	if (g->out_channels % g->groups) {
		amp_error(AMP_ERR_INVALID,
			  "Given groups=%" PRId64 ", expected weight to be "
			  "divisible by %" PRId64 " at dimension 0, but got "
			  "weight of size %s instead",
			  g->groups, g->groups,
			  cpu_shape_string(weight->ndim, weight->shape, b,
					   sizeof b));
		return conv_error(AMP_ERR_INVALID, weight, NULL);
	}
	if (g->channels != weight->shape[1] * g->groups) {
		amp_error(AMP_ERR_INVALID,
			  "Given groups=%" PRId64 ", weight of size %s, expected "
			  "input%s to have %" PRId64 " channels, but got %"
			  PRId64 " channels instead",
			  g->groups,
			  cpu_shape_string(weight->ndim, weight->shape, b,
					   sizeof b),
			  cpu_shape_string(input->ndim, input->shape, a,
					   sizeof a),
			  weight->shape[1] * g->groups, g->channels);
		return conv_error(AMP_ERR_INVALID, input, weight);
	}
	if (bias && (bias->ndim != 1 || bias->shape[0] != g->out_channels)) {
		amp_error(AMP_ERR_INVALID,
			  "Given weight of size %s, expected bias to be "
			  "1-dimensional with %" PRId64 " elements, but got "
			  "bias of size %s instead",
			  cpu_shape_string(weight->ndim, weight->shape, b,
					   sizeof b),
			  g->out_channels,
			  cpu_shape_string(bias->ndim, bias->shape, a,
					   sizeof a));
		return conv_error(AMP_ERR_INVALID, weight, bias);
	}
	int64_t padded[2] = { g->height + 2 * g->padding[0],
			      g->width + 2 * g->padding[1] };
	int64_t kernel[2] = { (g->kernel_h - 1) * g->dilation[0] + 1,
			      (g->kernel_w - 1) * g->dilation[1] + 1 };
	if (padded[0] < kernel[0] || padded[1] < kernel[1]) {
		amp_error(AMP_ERR_INVALID,
			  "Calculated padded input size per channel: %s. Kernel "
			  "size: %s. Kernel size can't be greater than actual "
			  "input size",
			  spatial(dims, padded, c, sizeof c),
			  spatial(dims, kernel, d, sizeof d));
		return conv_error(AMP_ERR_INVALID, input, weight);
	}
	g->out_h = (padded[0] - kernel[0]) / g->stride[0] + 1;
	g->out_w = (padded[1] - kernel[1]) / g->stride[1] + 1;
	return AMP_OK;
}

static int conv_dtype_check(const struct amp_tensor *input,
			    const struct amp_tensor *weight,
			    const struct amp_tensor *bias)
{
	char a[48], b[48];
	const struct amp_tensor *other = weight->dtype != input->dtype ? weight
					 : bias && bias->dtype != input->dtype
						 ? bias
						 : NULL;

	if (!other)
		return AMP_OK;
	amp_error(AMP_ERR_DTYPE, "Input type (%s) and %s type (%s) should be "
				 "the same",
		  cpu_tensor_type_name(input, a, sizeof a),
		  other == weight ? "weight" : "bias",
		  cpu_tensor_type_name(other, b, sizeof b));
	return conv_error(AMP_ERR_DTYPE, input, other);
}

/* im2col for one image of one group: columns (C/g * kh * kw, OH * OW). */
#define DEFINE_IM2COL(name, T)                                               \
	static void name(const T *image, int64_t channels,                   \
			 const struct conv_geometry *g, T *columns)           \
	{                                                                    \
		int64_t spatial_out = g->out_h * g->out_w;                   \
		for (int64_t c = 0; c < channels; c++)                       \
			for (int64_t ky = 0; ky < g->kernel_h; ky++)         \
				for (int64_t kx = 0; kx < g->kernel_w; kx++) { \
					T *row = columns +                   \
						 ((c * g->kernel_h + ky) *   \
							  g->kernel_w +      \
						  kx) * spatial_out;         \
					for (int64_t oy = 0; oy < g->out_h; oy++) { \
						int64_t y = oy * g->stride[0] - \
							    g->padding[0] +   \
							    ky * g->dilation[0]; \
						for (int64_t ox = 0; ox < g->out_w; ox++) { \
							int64_t x = ox * g->stride[1] - \
								    g->padding[1] + \
								    kx * g->dilation[1]; \
							row[oy * g->out_w + ox] = \
								y >= 0 && y < g->height && \
										x >= 0 && x < g->width \
									? image[(c * g->height + y) * g->width + x] \
									: (T)0; \
						}                            \
					}                                    \
				}                                            \
	}

DEFINE_IM2COL(im2col_f32, float)
DEFINE_IM2COL(im2col_f64, double)

static int conv(struct amp_call *call, int dims)
{
	struct amp_tensor *input = cpu_arg_tensor(call, 0);
	struct amp_tensor *weight = cpu_arg_tensor(call, 1);
	struct amp_tensor *bias = cpu_arg_tensor(call, 2);
	struct conv_geometry g = { 0 };
	bool batched = false;
	int status = conv_setup(call, dims, &g, &batched);

	if (status == AMP_OK)
		status = conv_dtype_check(input, weight, bias);
	if (status != AMP_OK)
		return status;
	if (!amp_dtype_is_floating(input->dtype))
		return cpu_not_implemented("slow_conv2d_cpu", input);

	enum amp_dtype opmath = cpu_opmath(input->dtype);
	size_t esize = amp_dtype_size(opmath);
	int64_t shape[4], *at = shape;
	if (batched)
		*at++ = g.batch;
	*at++ = g.out_channels;
	if (dims == 2)
		*at++ = g.out_h;
	*at++ = g.out_w;
	struct amp_tensor *out = amp_tensor_alloc((int)(at - shape), shape,
						  input->dtype, input->device);
	if (!out)
		return amp_last_status();

	int64_t group_in = g.channels / g.groups;
	int64_t group_out = g.out_channels / g.groups;
	int64_t patch = group_in * g.kernel_h * g.kernel_w;
	int64_t spatial_out = g.out_h * g.out_w;
	void *owned[3] = { NULL, NULL, NULL };
	const char *x = cpu_load(input, input->dtype, opmath, &owned[0]);
	const char *w = cpu_load(weight, weight->dtype, opmath, &owned[1]);
	const char *b = bias ? cpu_load(bias, bias->dtype, opmath, &owned[2])
			     : NULL;
	char *values = cpu_alloc((size_t)amp_tensor_numel(out), opmath);
	char *columns = cpu_alloc((size_t)(patch * spatial_out), opmath);
	status = x && w && (b || !bias) && values && columns
			 ? AMP_OK
			 : amp_last_status();
	for (int64_t n = 0; status == AMP_OK && n < g.batch; n++)
		for (int64_t gr = 0; gr < g.groups; gr++) {
			const char *image =
				x + ((n * g.channels + gr * group_in) *
				     g.height * g.width) * (int64_t)esize;
			char *result = values + ((n * g.out_channels +
						  gr * group_out) *
						 spatial_out) * (int64_t)esize;
			if (opmath == AMP_DTYPE_F32)
				im2col_f32((const float *)image, group_in, &g,
					   (float *)columns);
			else
				im2col_f64((const double *)image, group_in, &g,
					   (double *)columns);
			/* result rows start as the bias of their channel */
			for (int64_t o = 0; b && o < group_out; o++)
				for (int64_t s = 0; s < spatial_out; s++)
					memcpy(result + (o * spatial_out + s) *
								(int64_t)esize,
					       b + (gr * group_out + o) *
							   (int64_t)esize,
					       esize);
			cpu_gemm(opmath, false, false, group_out, spatial_out,
				 patch, 1.0,
				 w + gr * group_out * patch * (int64_t)esize,
				 patch > 0 ? patch : 1, columns,
				 spatial_out > 0 ? spatial_out : 1,
				 b ? 1.0 : 0.0, result);
		}
	if (status == AMP_OK)
		cpu_store(out, values, opmath);
	for (int i = 0; i < 3; i++)
		free(owned[i]);
	free(values);
	free(columns);
	return cpu_set_output_or_free(call, out, status);
}

int amp_forward_conv1d(struct amp_call *call)
{
	return conv(call, 1);
}

int amp_forward_conv2d(struct amp_call *call)
{
	return conv(call, 2);
}
