/* The autocast policy table: one row per (device type, ATen op overload) of
 * PyTorch's CUDA and CPU autocast lists, in PyTorch's order, including the
 * ops libamp cannot execute, so that `amptrace explain` answers for every
 * op PyTorch autocasts.  The dispatcher resolves an executable op's policy
 * here by (name, overload) in the newest lists; anything absent is
 * AMP_POLICY_NONE (PyTorch's fallthrough).
 *
 * Versions (enum amp_torch_version).  A row holds from its `added` version
 * up to its `removed` one; rows without a range hold in every version.
 * Where an op's policy changed, each version has its own row.
 *
 * 2.13 (also "newest"): read line by line from pytorch/pytorch
 *   aten/src/ATen/autocast_mode.h   @ d70fe7f33910bbe8bc8b6027388a84bb102a453d
 *     (AT_FORALL_LOWER_PRECISION_FP, AT_FORALL_FP32,
 *      AT_FORALL_FP32_SET_OPT_DTYPE, AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE,
 *      AT_FORALL_PROMOTE: the CUDA lists)
 *   aten/src/ATen/autocast_mode.cpp @ 008ec6b1840c94ff6d0f685bc10fbf585167c673
 *     (TORCH_LIBRARY_IMPL(aten, Autocast): the shared lists plus
 *      cudnn_convolution(_transpose) and the banned binary_cross_entropy;
 *      TORCH_LIBRARY_IMPL(aten, AutocastCPU): the CPU lists),
 *   then checked against the installed torch 2.13.0+cpu
 *   (tests/test_torch_policy.py): its AutocastCPU (127) and AutocastCUDA
 *   (119) registrations are exactly the 2.13 rows (2.13 registers no
 *   Dimname overload, and CUDA's rms_norm, which the sources read did
 *   not have), every CPU row runs under torch.autocast("cpu") with bf16
 *   and with f16 as explain says, and every CUDA row under CUDA autocast
 *   on FakeTensors of device cuda gives explain's casts and dtypes.
 * 2.14: the 2.13 rows, changed where the installed torch 2.14.1+cu130
 *   differs (tests/test_torch_policy.py under it): aten::cholesky and
 *   aten::qr no longer exist, and linalg_matrix_sqrth (new in 2.14) is
 *   fp32 on both devices.  Its AutocastCPU (126) and AutocastCUDA (121)
 *   registrations are exactly the 2.14 rows, but for CUDA's _cudnn_rnn:
 *   registered only where ATen is built with cuDNN (2.13.0+cpu and
 *   Debian's 1.13 are not), in every version, and not a row here (its
 *   wrapper casts to f16 whatever autocast's dtype, and flattens the
 *   weights into a new buffer: no policy of the table says that).
 * 1.13: pytorch/pytorch tag v1.13.1, as Debian ships it
 *   (pytorch_1.13.1+dfsg.orig.tar.xz; the search store holds no v1.13.1
 *   copy of these files):
 *   aten/src/ATen/autocast_mode.cpp (TORCH_LIBRARY_IMPL(aten, Autocast) and
 *     (aten, AutocastCPU): KERNEL/KERNEL_CPU lines), and
 *   aten/src/ATen/autocast_mode.h as libtorch-dev 1.13.1+dfsg-4 installs it
 *     (/usr/include/ATen/autocast_mode.h: prioritize() and cached_cast()
 *     have Tensor and TensorList overloads only, hence the CPU cat row's
 *     AMP_ROW_ARGS_UNTOUCHED),
 *   and checked against the installed 1.13.1 runtime: its AutocastCPU (126)
 *   and AutocastCUDA (107) registrations are exactly the 1.13 rows below,
 *   and every CPU row runs under torch.autocast("cpu") as explain says
 *   (tests/test_torch_policy.py).
 * A bare op name is PyTorch's default overload (overload "").
 *
 * The `output` column.  NULL means the op's results have the compute dtype:
 * the dtype argument when the call passes one, otherwise torch.promote_types
 * folded over the tensor arguments as the kernel receives them (after the
 * autocast casts; Python numbers join as wrapped scalars).  Otherwise it is a
 * comma-separated list of the op's outputs, first output first (the one
 * explain reports as `output`); trailing outputs whose dtype is not
 * interesting may be left out.  Each item is one of
 *   =        the compute dtype
 *   self     the dtype of the first tensor argument (after casts)
 *   float    the compute dtype, but integral/bool becomes f32 (exp, atan2)
 *   long     the compute dtype, but integral/bool becomes i64 (sum, prod)
 *   complex  the complex dtype of that precision: f16 -> c32, f32 -> c64,
 *            f64 -> c128, integral -> c64 (fft_rfft, polar, linalg_eig)
 *   f32, i64, i32, bool, ...   always that dtype (linalg_matrix_rank -> i64)
 * The rule describes the op itself, not the policy, so explain also applies
 * it when the op runs unlisted (CPU softmax uses the CUDA row's rule).
 */
#include "amp_policy.h"

/* ROW_IN(range, ...): a row holding only in `range` (two values: added,
 * removed), with AMP_ROW_* flags. */
#define ALL_VERSIONS AMP_TORCH_1_13, 0
#define FROM_2_13 AMP_TORCH_2_13, 0
#define FROM_2_14 AMP_TORCH_2_14, 0
#define UNTIL_1_13 AMP_TORCH_1_13, AMP_TORCH_2_13
#define UNTIL_2_13 AMP_TORCH_1_13, AMP_TORCH_2_14
#define ROW_IN(...) ROW_IN_(__VA_ARGS__)
#define ROW_IN_(added, removed, dev, op, overload, policy, output, flags)    \
	{ AMP_DEVICE_##dev, op, overload, AMP_POLICY_##policy, output,       \
	  added, removed, flags }
#define ROW(dev, op, overload, policy, output)                              \
	ROW_IN(ALL_VERSIONS, dev, op, overload, policy, output, 0)

/* CUDA (the `Autocast` key), lower precision = f16 by default. */
#define CUDA_LP(op, overload) ROW(CUDA, op, overload, LOWER_PRECISION_FP, NULL)
#define CUDA_LP_OUT(op, overload, out)                                      \
	ROW(CUDA, op, overload, LOWER_PRECISION_FP, out)
#define CUDA_FP32(op, overload, out) ROW(CUDA, op, overload, FP32, out)
#define CUDA_SET_OPT(op, overload, out)                                     \
	ROW(CUDA, op, overload, FP32_SET_OPT_DTYPE, out)
#define CUDA_APPEND(op, overload) ROW(CUDA, op, overload, FP32_APPEND_DTYPE, NULL)
#define CUDA_PROMOTE(op, out) ROW(CUDA, op, "", PROMOTE, out)
/* CPU (the `AutocastCPU` key), lower precision = bf16 by default. */
#define CPU_LP(op, overload) ROW(CPU, op, overload, LOWER_PRECISION_FP, NULL)
#define CPU_FP32(op, overload, out) ROW(CPU, op, overload, FP32, out)
#define CPU_PROMOTE(op, overload, out) ROW(CPU, op, overload, PROMOTE, out)

static const struct amp_policy_row policy_rows[] = {
	/* ---- CUDA lower_precision_fp: AT_FORALL_LOWER_PRECISION_FP ---- */
	CUDA_LP("_convolution", "deprecated"),
	CUDA_LP("_convolution", ""),
	CUDA_LP("conv1d", ""),
	CUDA_LP("conv2d", ""),
	CUDA_LP("conv3d", ""),
	CUDA_LP("conv_tbc", ""),
	CUDA_LP("conv_transpose1d", ""),
	CUDA_LP("conv_transpose2d", "input"),
	CUDA_LP("conv_transpose3d", "input"),
	CUDA_LP("convolution", ""),
	CUDA_LP("prelu", ""),
	CUDA_LP("addmm", ""),
	CUDA_LP("addmv", ""),
	CUDA_LP("addr", ""),
	CUDA_LP("matmul", ""),
	CUDA_LP("einsum", ""),
	CUDA_LP("mm", ""),
	CUDA_LP("mv", ""),
	ROW_IN(FROM_2_13, CUDA, "linalg_vecdot", "",
	       LOWER_PRECISION_FP, NULL, 0),
	CUDA_LP("linear", ""),
	CUDA_LP("addbmm", ""),
	CUDA_LP("baddbmm", ""),
	CUDA_LP("bmm", ""),
	CUDA_LP("chain_matmul", ""),
	CUDA_LP("linalg_multi_dot", ""),
	CUDA_LP_OUT("_thnn_fused_lstm_cell", "", "=,=,="), /* hy, cy, workspace */
	CUDA_LP_OUT("_thnn_fused_gru_cell", "", "=,="),    /* hy, workspace */
	CUDA_LP_OUT("lstm_cell", "", "=,="),               /* hy, cy */
	CUDA_LP("gru_cell", ""),
	CUDA_LP("rnn_tanh_cell", ""),
	CUDA_LP("rnn_relu_cell", ""),
	/* output, logsumexp (f32), then sequence/seed bookkeeping */
	ROW_IN(FROM_2_13, CUDA, "_scaled_dot_product_flash_attention", "",
	       LOWER_PRECISION_FP, "=,f32", 0),
	ROW_IN(FROM_2_13, CUDA, "scaled_dot_product_attention", "",
	       LOWER_PRECISION_FP, NULL, 0),
	/* registered for CUDA only, after the shared list */
	CUDA_LP("cudnn_convolution", ""),
	CUDA_LP("cudnn_convolution_transpose", ""),

	/* ---- CUDA fp32: AT_FORALL_FP32 ---- */
	CUDA_FP32("acos", "", "float"),
	CUDA_FP32("asin", "", "float"),
	CUDA_FP32("cosh", "", "float"),
	CUDA_FP32("erfinv", "", "float"),
	CUDA_FP32("exp", "", "float"),
	CUDA_FP32("expm1", "", "float"),
	CUDA_FP32("log", "", "float"),
	CUDA_FP32("log10", "", "float"),
	CUDA_FP32("log2", "", "float"),
	CUDA_FP32("log1p", "", "float"),
	CUDA_FP32("reciprocal", "", "float"),
	CUDA_FP32("rsqrt", "", "float"),
	CUDA_FP32("sinh", "", "float"),
	CUDA_FP32("tan", "", "float"),
	CUDA_FP32("pow", "Tensor_Scalar", NULL),
	CUDA_FP32("pow", "Tensor_Tensor", NULL),
	CUDA_FP32("pow", "Scalar", NULL),
	CUDA_FP32("softplus", "", NULL),
	/* normalisations keep the input's dtype with f32 affine parameters */
	CUDA_FP32("layer_norm", "", "self"),
	CUDA_FP32("native_layer_norm", "", "self"), /* out, mean, rstd */
	CUDA_FP32("group_norm", "", "self"),
	ROW_IN(FROM_2_13, CUDA, "rms_norm", "", FP32, "self", 0),
	ROW_IN(UNTIL_1_13, CUDA, "frobenius_norm", "", FP32, NULL, 0),
	CUDA_FP32("frobenius_norm", "dim", NULL),
	CUDA_FP32("nuclear_norm", "", NULL),
	CUDA_FP32("nuclear_norm", "dim", NULL),
	CUDA_FP32("cosine_similarity", "", NULL),
	CUDA_FP32("poisson_nll_loss", "", NULL),
	CUDA_FP32("cosine_embedding_loss", "", NULL),
	CUDA_FP32("nll_loss", "", "self"),
	CUDA_FP32("nll_loss2d", "", "self"),
	CUDA_FP32("hinge_embedding_loss", "", NULL),
	CUDA_FP32("kl_div", "", NULL),
	CUDA_FP32("l1_loss", "", NULL),
	CUDA_FP32("smooth_l1_loss", "", NULL),
	CUDA_FP32("huber_loss", "", NULL),
	CUDA_FP32("mse_loss", "", NULL),
	CUDA_FP32("margin_ranking_loss", "", NULL),
	CUDA_FP32("multilabel_margin_loss", "", "self"),
	CUDA_FP32("soft_margin_loss", "", "self"),
	CUDA_FP32("triplet_margin_loss", "", NULL),
	CUDA_FP32("multi_margin_loss", "", "self"),
	CUDA_FP32("binary_cross_entropy_with_logits", "", NULL),
	CUDA_FP32("dist", "", NULL),
	CUDA_FP32("pdist", "", NULL),
	CUDA_FP32("cdist", "", NULL),
	CUDA_FP32("renorm", "", "self"),
	CUDA_FP32("logsumexp", "", "float"),
	ROW_IN(FROM_2_13, CUDA, "upsample_nearest1d", "", FP32, "self", 0),
	ROW_IN(FROM_2_13, CUDA, "_upsample_nearest_exact1d", "",
	       FP32, "self", 0),
	ROW_IN(FROM_2_13, CUDA, "upsample_nearest2d", "", FP32, "self", 0),
	ROW_IN(FROM_2_13, CUDA, "_upsample_nearest_exact2d", "",
	       FP32, "self", 0),
	ROW_IN(FROM_2_13, CUDA, "upsample_nearest3d", "", FP32, "self", 0),
	ROW_IN(FROM_2_13, CUDA, "_upsample_nearest_exact3d", "",
	       FP32, "self", 0),
	ROW_IN(FROM_2_13, CUDA, "upsample_linear1d", "", FP32, "self", 0),
	ROW_IN(FROM_2_13, CUDA, "upsample_bilinear2d", "", FP32, "self", 0),
	ROW_IN(FROM_2_13, CUDA, "_upsample_bilinear2d_aa", "",
	       FP32, "self", 0),
	ROW_IN(FROM_2_13, CUDA, "upsample_trilinear3d", "", FP32, "self", 0),
	ROW_IN(FROM_2_13, CUDA, "upsample_bicubic2d", "", FP32, "self", 0),
	ROW_IN(FROM_2_13, CUDA, "_upsample_bicubic2d_aa", "",
	       FP32, "self", 0),
	ROW_IN(FROM_2_14, CUDA, "linalg_matrix_sqrth", "", FP32, NULL, 0),

	/* ---- CUDA fp32_set_opt_dtype: AT_FORALL_FP32_SET_OPT_DTYPE ----
	 * (norm.ScalarOpt_dtype & co. are deliberately not registered: their
	 * dtype is not optional) */
	CUDA_SET_OPT("prod", "", "long"),
	CUDA_SET_OPT("prod", "dim_int", "long"),
	ROW_IN(UNTIL_1_13, CUDA, "prod", "dim_Dimname", FP32_SET_OPT_DTYPE,
	       "long", 0),
	CUDA_SET_OPT("softmax", "int", NULL),
	ROW_IN(UNTIL_1_13, CUDA, "softmax", "Dimname", FP32_SET_OPT_DTYPE,
	       NULL, 0),
	CUDA_SET_OPT("log_softmax", "int", NULL),
	ROW_IN(UNTIL_1_13, CUDA, "log_softmax", "Dimname", FP32_SET_OPT_DTYPE,
	       NULL, 0),
	CUDA_SET_OPT("cumprod", "", "long"),
	ROW_IN(UNTIL_1_13, CUDA, "cumprod", "dimname", FP32_SET_OPT_DTYPE, "long",
	       0),
	CUDA_SET_OPT("cumsum", "", "long"),
	ROW_IN(UNTIL_1_13, CUDA, "cumsum", "dimname", FP32_SET_OPT_DTYPE, "long",
	       0),
	ROW_IN(FROM_2_13, CUDA, "linalg_vector_norm", "",
	       FP32_SET_OPT_DTYPE, NULL, 0),
	ROW_IN(FROM_2_13, CUDA, "linalg_matrix_norm", "",
	       FP32_SET_OPT_DTYPE, NULL, 0),
	ROW_IN(FROM_2_13, CUDA, "linalg_matrix_norm", "str_ord",
	       FP32_SET_OPT_DTYPE, NULL, 0),
	CUDA_SET_OPT("sum", "", "long"),
	CUDA_SET_OPT("sum", "dim_IntList", "long"),
	ROW_IN(UNTIL_1_13, CUDA, "sum", "dim_DimnameList", FP32_SET_OPT_DTYPE,
	       "long", 0),

	/* ---- CUDA fp32_append_dtype: AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE
	 * (redispatched to the dtype-taking overload with the dtype appended) */
	CUDA_APPEND("norm", "Scalar"),
	CUDA_APPEND("norm", "ScalarOpt_dim"),
	ROW_IN(UNTIL_1_13, CUDA, "norm", "names_ScalarOpt_dim",
	       FP32_APPEND_DTYPE, NULL, 0),

	/* ---- CUDA promote: AT_FORALL_PROMOTE ---- */
	CUDA_PROMOTE("addcdiv", NULL),
	CUDA_PROMOTE("addcmul", NULL),
	CUDA_PROMOTE("atan2", "float"),
	CUDA_PROMOTE("bilinear", NULL),
	CUDA_PROMOTE("cross", NULL),
	CUDA_PROMOTE("dot", NULL),
	ROW_IN(FROM_2_13, CUDA, "vdot", "", PROMOTE, NULL, 0),
	CUDA_PROMOTE("grid_sampler", "self"),
	CUDA_PROMOTE("index_put", "self"),
	CUDA_PROMOTE("tensordot", NULL),
	CUDA_PROMOTE("scatter_add", "self"),

	/* ---- CUDA banned ---- */
	ROW(CUDA, "binary_cross_entropy", "", BANNED, NULL),

	/* ---- CPU lower_precision_fp ---- */
	CPU_LP("conv1d", ""),
	CPU_LP("conv1d", "padding"),
	CPU_LP("conv2d", ""),
	CPU_LP("conv2d", "padding"),
	CPU_LP("conv3d", ""),
	CPU_LP("conv3d", "padding"),
	CPU_LP("bmm", ""),
	CPU_LP("mm", ""),
	ROW_IN(FROM_2_13, CPU, "linalg_vecdot", "",
	       LOWER_PRECISION_FP, NULL, 0),
	CPU_LP("baddbmm", ""),
	CPU_LP("addmm", ""),
	ROW_IN(FROM_2_13, CPU, "_addmm_activation", "",
	       LOWER_PRECISION_FP, NULL, 0),
	CPU_LP("addbmm", ""),
	CPU_LP("linear", ""),
	CPU_LP("_convolution", "deprecated"), /* aten::_convolution falls through */
	CPU_LP("matmul", ""),
	CPU_LP("conv_tbc", ""),
	/* output, hy, cy, workspace */
	/* output, hy, cy; the fourth is oneDNN's u8 workspace (torch
	 * 2.13.0 run: not the compute dtype) */
	ROW_IN(FROM_2_13, CPU, "mkldnn_rnn_layer", "", LOWER_PRECISION_FP,
	       "=,=,=", 0),
	/* fp32 in 1.13 (below) */
	ROW_IN(FROM_2_13, CPU, "conv_transpose1d", "",
	       LOWER_PRECISION_FP, NULL, 0),
	ROW_IN(FROM_2_13, CPU, "conv_transpose2d", "input",
	       LOWER_PRECISION_FP, NULL, 0),
	ROW_IN(FROM_2_13, CPU, "conv_transpose3d", "input",
	       LOWER_PRECISION_FP, NULL, 0),
	ROW_IN(FROM_2_13, CPU, "prelu", "", LOWER_PRECISION_FP, NULL, 0),
	ROW_IN(FROM_2_13, CPU, "scaled_dot_product_attention", "",
	       LOWER_PRECISION_FP, NULL, 0),
	/* out, weights */
	ROW_IN(FROM_2_13, CPU, "_native_multi_head_attention", "",
	       LOWER_PRECISION_FP, "=,=", 0),

	/* ---- CPU fp32 ---- */
	/* 1.13 only: conv_transpose went to lower_precision_fp, symeig was
	 * deleted, linalg_matrix_norm left the CPU list */
	ROW_IN(UNTIL_1_13, CPU, "conv_transpose1d", "", FP32, NULL, 0),
	ROW_IN(UNTIL_1_13, CPU, "conv_transpose2d", "input", FP32, NULL, 0),
	ROW_IN(UNTIL_1_13, CPU, "conv_transpose3d", "input", FP32, NULL, 0),
	CPU_FP32("avg_pool3d", "", "self"),
	CPU_FP32("binary_cross_entropy", "", NULL),
	CPU_FP32("grid_sampler", "", "self"),
	CPU_FP32("polar", "", "complex"),
	CPU_FP32("prod", "", "long"),
	CPU_FP32("prod", "dim_int", "long"),
	ROW_IN(UNTIL_1_13, CPU, "prod", "dim_Dimname", FP32, "long", 0),
	CPU_FP32("quantile", "", NULL),
	CPU_FP32("quantile", "scalar", NULL),
	CPU_FP32("nanquantile", "", NULL),
	CPU_FP32("nanquantile", "scalar", NULL),
	CPU_FP32("stft", "", "complex"), /* return_complex=True */
	CPU_FP32("stft", "center", "complex"),
	CPU_FP32("cdist", "", NULL),
	CPU_FP32("grid_sampler_2d", "", "self"),
	CPU_FP32("_grid_sampler_2d_cpu_fallback", "", "self"),
	CPU_FP32("grid_sampler_3d", "", "self"),
	CPU_FP32("trace", "", "long"),
	CPU_FP32("view_as_complex", "", "complex"),
	/* aten::cholesky and aten::qr are gone from 2.14 (torch.cholesky
	 * and torch.qr removed) */
	ROW_IN(UNTIL_2_13, CPU, "cholesky", "", FP32, NULL, 0),
	CPU_FP32("cholesky_inverse", "", NULL),
	CPU_FP32("cholesky_solve", "", NULL),
	CPU_FP32("inverse", "", NULL),
	CPU_FP32("lu_solve", "", NULL),
	CPU_FP32("orgqr", "", NULL),
	CPU_FP32("ormqr", "", NULL),
	CPU_FP32("pinverse", "", NULL),
	CPU_FP32("max_pool3d", "", "self"),
	CPU_FP32("max_unpool2d", "", "self"),
	CPU_FP32("max_unpool3d", "", "self"),
	CPU_FP32("adaptive_avg_pool3d", "", "self"),
	CPU_FP32("reflection_pad1d", "", "self"),
	CPU_FP32("reflection_pad2d", "", "self"),
	CPU_FP32("replication_pad1d", "", "self"),
	CPU_FP32("replication_pad2d", "", "self"),
	CPU_FP32("replication_pad3d", "", "self"),
	CPU_FP32("mse_loss", "", NULL),
	CPU_FP32("cosine_embedding_loss", "", NULL),
	CPU_FP32("nll_loss", "", "self"),
	CPU_FP32("nll_loss2d", "", "self"),
	CPU_FP32("hinge_embedding_loss", "", NULL),
	CPU_FP32("poisson_nll_loss", "", NULL),
	CPU_FP32("smooth_l1_loss", "", NULL),
	CPU_FP32("cross_entropy_loss", "", "self"),
	CPU_FP32("l1_loss", "", NULL),
	CPU_FP32("huber_loss", "", NULL),
	CPU_FP32("margin_ranking_loss", "", NULL),
	CPU_FP32("soft_margin_loss", "", "self"),
	CPU_FP32("triplet_margin_loss", "", NULL),
	CPU_FP32("multi_margin_loss", "", "self"),
	CPU_FP32("ctc_loss", "IntList", "self"),
	CPU_FP32("ctc_loss", "Tensor", "self"),
	CPU_FP32("kl_div", "", NULL),
	CPU_FP32("multilabel_margin_loss", "", "self"),
	CPU_FP32("binary_cross_entropy_with_logits", "", NULL),
	CPU_FP32("fft_fft", "", "complex"),
	CPU_FP32("fft_ifft", "", "complex"),
	CPU_FP32("fft_fft2", "", "complex"),
	CPU_FP32("fft_ifft2", "", "complex"),
	CPU_FP32("fft_fftn", "", "complex"),
	CPU_FP32("fft_ifftn", "", "complex"),
	CPU_FP32("fft_rfft", "", "complex"),
	CPU_FP32("fft_irfft", "", "float"),
	CPU_FP32("fft_rfft2", "", "complex"),
	CPU_FP32("fft_irfft2", "", "float"),
	CPU_FP32("fft_rfftn", "", "complex"),
	CPU_FP32("fft_irfftn", "", "float"),
	CPU_FP32("fft_hfft", "", "float"),
	CPU_FP32("fft_ihfft", "", "complex"),
	CPU_FP32("linalg_cond", "", NULL),
	CPU_FP32("linalg_cond", "p_str", NULL),
	CPU_FP32("linalg_matrix_rank", "", "i64"),
	CPU_FP32("linalg_matrix_rank", "tol_tensor", "i64"),
	CPU_FP32("linalg_matrix_rank", "atol_rtol_tensor", "i64"),
	CPU_FP32("linalg_matrix_rank", "atol_rtol_float", "i64"),
	CPU_FP32("linalg_solve", "", NULL),
	CPU_FP32("linalg_cholesky", "", NULL),
	CPU_FP32("linalg_svdvals", "", NULL),
	CPU_FP32("linalg_eigvals", "", "complex"),
	CPU_FP32("linalg_eigvalsh", "", NULL),
	CPU_FP32("linalg_inv", "", NULL),
	CPU_FP32("linalg_householder_product", "", NULL),
	CPU_FP32("linalg_tensorinv", "", NULL),
	CPU_FP32("linalg_tensorsolve", "", NULL),
	CPU_FP32("fake_quantize_per_tensor_affine", "", "self"),
	CPU_FP32("geqrf", "", "=,="),                 /* a, tau */
	CPU_FP32("_lu_with_info", "", "=,i32,i32"),   /* LU, pivots, info */
	ROW_IN(UNTIL_2_13, CPU, "qr", "", FP32, "=,=", 0),
	CPU_FP32("svd", "", "=,=,="),
	CPU_FP32("triangular_solve", "", "=,="),
	CPU_FP32("fractional_max_pool2d", "", "self,i64"), /* out, indices */
	CPU_FP32("fractional_max_pool3d", "", "self,i64"),
	CPU_FP32("adaptive_max_pool3d", "", "self,i64"),
	CPU_FP32("multilabel_margin_loss_forward", "", "self,self"),
	CPU_FP32("linalg_qr", "", "=,="),
	CPU_FP32("linalg_cholesky_ex", "", "=,i32"),  /* L, info */
	CPU_FP32("linalg_svd", "", "=,=,="),
	CPU_FP32("linalg_eig", "", "complex,complex"),
	CPU_FP32("linalg_eigh", "", "=,="),
	CPU_FP32("linalg_lstsq", "", "=,=,i64,="),    /* solution, residuals, rank, sv */
	CPU_FP32("linalg_inv_ex", "", "=,i32"),       /* inverse, info */
	ROW_IN(FROM_2_14, CPU, "linalg_matrix_sqrth", "", FP32, NULL, 0),
	ROW_IN(UNTIL_1_13, CPU, "symeig", "", FP32, "=,=", 0), /* e, V */
	ROW_IN(UNTIL_1_13, CPU, "linalg_matrix_norm", "", FP32, NULL, 0),
	ROW_IN(UNTIL_1_13, CPU, "linalg_matrix_norm", "str_ord", FP32, NULL, 0),

	/* ---- CPU promote ---- */
	CPU_PROMOTE("stack", "", NULL),
	ROW_IN(FROM_2_13, CPU, "cat", "", PROMOTE, NULL, 0),
	/* registered with `const ITensorListRef&`, which 1.13's header has
	 * no prioritize/cached_cast overload for */
	ROW_IN(UNTIL_1_13, CPU, "cat", "",
	       PROMOTE, NULL, AMP_ROW_ARGS_UNTOUCHED),
	CPU_PROMOTE("index_copy", "", "self"),
	ROW_IN(UNTIL_1_13, CPU, "index_copy", "dimname", PROMOTE, "self", 0),
};

size_t amp_policy_row_count(void)
{
	return sizeof(policy_rows) / sizeof(policy_rows[0]);
}

const struct amp_policy_row *amp_policy_row_at(size_t index)
{
	if (index >= amp_policy_row_count())
		return NULL;
	return &policy_rows[index];
}

/* Each version's rules beside its rows, oldest first. */
static const struct amp_torch_table torch_tables[AMP_TORCH_VERSION_COUNT] = {
	[AMP_TORCH_1_13] = {
		.name = "1.13",
		.major = 1,
		.minor = 13,
		/* autocast_mode.cpp v1.13.1: `thread_local
		 * std::unordered_map<TensorImpl*, val_type> cached_casts` */
		.cache_scope = AMP_CACHE_PER_THREAD,
		/* set_autocast_cpu_dtype: TORCH_CHECK(dtype == kBFloat16) */
		.cpu_f16 = false,
		.source = "pytorch/pytorch v1.13.1 "
			  "aten/src/ATen/autocast_mode.{h,cpp}",
	},
	[AMP_TORCH_2_13] = {
		.name = "2.13",
		.major = 2,
		.minor = 13,
		/* one mutex-guarded map shared by all threads */
		.cache_scope = AMP_CACHE_PER_PROCESS,
		.cpu_f16 = true,
		.source = "pytorch/pytorch aten/src/ATen/autocast_mode.cpp @ "
			  "008ec6b1840c, autocast_mode.h @ d70fe7f33910, "
			  "checked against torch 2.13.0",
	},
	[AMP_TORCH_2_14] = {
		.name = "2.14",
		.major = 2,
		.minor = 14,
		.cache_scope = AMP_CACHE_PER_PROCESS,
		.cpu_f16 = true,
		.source = "the 2.13 lists as torch 2.14.1 registers and runs "
			  "them (no cholesky, qr; linalg_matrix_sqrth added)",
	},
};

const struct amp_torch_table *amp_torch_table(enum amp_torch_version version)
{
	if ((unsigned)version >= AMP_TORCH_VERSION_COUNT)
		return NULL;
	return &torch_tables[version];
}

