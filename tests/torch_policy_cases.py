"""Representative calls of every op on PyTorch's CPU autocast lists (1.13's
and 2.13's), for test_torch_policy.py: (label, case) where label is the ATen
"op.overload" explain is asked about and case holds `fn` (the exact
overload, torch.ops.aten.*, or the Python API where torch.ops cannot take
the arguments: Dimname overloads), `args`, optional `kwargs`, and
`named` when the inputs are named tensors (which a TorchDispatchMode
cannot see: their casts show only in the values), `raises` when the op's
own kernel raises after autocast's casts (1.13's NYI Dimname kernels),
`compare` when only the first outputs hold values (the rest scratch).

Floating inputs are f32 for lower_precision_fp ops and the autocast's
lower-precision dtype (LP: bf16, or f16 in 2.x) for fp32 ops, so that
autocast has something to cast; promote ops get mixed inputs.  An op this
torch does not have (1.13's symeig in 2.13) gives no case."""
import torch

aten = torch.ops.aten
F32 = torch.float32
BF16 = torch.bfloat16
F16 = torch.float16
LP = BF16  # set by cases()


def t(*shape, dtype=F32, low=None):
    """A reproducible tensor; `low` shifts values to be >= low."""
    g = torch.Generator().manual_seed(hash(shape) % 1000)
    x = torch.randn(*shape, generator=g)
    if low is not None:
        x = x.abs() + low
    return x.to(dtype)


def spd(n, dtype):
    """A symmetric positive definite matrix that stays one in bf16."""
    m = t(n, n)
    return (m @ m.T + n * torch.eye(n)).to(dtype)


def named(x, *names):
    return x.refine_names(*names)


def lu_parts(dtype):
    lu, pivots = torch.linalg.lu_factor(spd(3, F32))
    return lu.to(dtype), pivots


def lp_cases():
    x1, w1 = t(1, 2, 8), t(3, 2, 3)
    x2, w2 = t(1, 2, 5, 5), t(3, 2, 3, 3)
    x3, w3 = t(1, 2, 4, 4, 4), t(3, 2, 3, 3, 3)
    a, b = t(2, 3, 4), t(2, 4, 5)
    yield "conv1d", dict(fn=aten.conv1d.default, args=[x1, w1, t(3)])
    yield "conv1d.padding", dict(fn=aten.conv1d.padding,
                                 args=[x1, w1, t(3), [1], "same", [1], 1])
    yield "conv2d", dict(fn=aten.conv2d.default, args=[x2, w2, t(3)])
    yield "conv2d.padding", dict(fn=aten.conv2d.padding,
                                 args=[x2, w2, None, [1], "same", [1], 1])
    yield "conv3d", dict(fn=aten.conv3d.default, args=[x3, w3])
    yield "conv3d.padding", dict(fn=aten.conv3d.padding,
                                 args=[x3, w3, None, [1], "valid", [1], 1])
    yield "bmm", dict(fn=aten.bmm.default, args=[a, b])
    yield "mm", dict(fn=aten.mm.default, args=[t(3, 4), t(4, 5, dtype=BF16)])
    yield "baddbmm", dict(fn=aten.baddbmm.default, args=[t(2, 3, 5), a, b])
    yield "addmm", dict(fn=aten.addmm.default,
                        args=[t(3, 5), t(3, 4), t(4, 5)])
    yield "addbmm", dict(fn=aten.addbmm.default, args=[t(3, 5), a, b])
    yield "linear", dict(fn=aten.linear.default,
                         args=[t(3, 4), t(5, 4), t(5, dtype=BF16)])
    yield "_convolution.deprecated", dict(
        fn=aten._convolution.deprecated,
        args=[x2, w2, t(3), [1, 1], [0, 0], [1, 1], False, [0, 0], 1,
              False, False, True])
    yield "matmul", dict(fn=aten.matmul.default, args=[t(3, 4), t(4)])
    yield "conv_tbc", dict(fn=aten.conv_tbc.default,
                           args=[t(5, 2, 3), t(3, 3, 4), t(4), 1])


def fp32_nn_cases():
    h = LP
    x2, x3 = t(1, 1, 4, 4, dtype=h), t(1, 1, 4, 4, 4, dtype=h)
    yield "conv_transpose1d", dict(fn=aten.conv_transpose1d.default,
                                   args=[t(1, 2, 5, dtype=h), t(2, 3, 3)])
    yield "conv_transpose2d.input", dict(
        fn=aten.conv_transpose2d.input,
        args=[t(1, 2, 5, 5, dtype=h), t(2, 3, 3, 3, dtype=h)])
    yield "conv_transpose3d.input", dict(
        fn=aten.conv_transpose3d.input,
        args=[t(1, 2, 3, 3, 3, dtype=h), t(2, 3, 2, 2, 2, dtype=h), t(3)])
    yield "avg_pool3d", dict(fn=aten.avg_pool3d.default, args=[x3, [2, 2, 2]])
    yield "max_pool3d", dict(fn=aten.max_pool3d.default, args=[x3, [2, 2, 2]])
    pooled, indices = torch.nn.functional.max_pool2d(
        t(1, 1, 4, 4), 2, return_indices=True)
    yield "max_unpool2d", dict(fn=aten.max_unpool2d.default,
                               args=[pooled.to(h), indices, [4, 4]])
    pooled3, indices3 = torch.nn.functional.max_pool3d(
        t(1, 1, 4, 4, 4), 2, return_indices=True)
    yield "max_unpool3d", dict(fn=aten.max_unpool3d.default,
                               args=[pooled3.to(h), indices3, [4, 4, 4],
                                     [2, 2, 2], [0, 0, 0]])
    yield "adaptive_avg_pool3d", dict(fn=aten.adaptive_avg_pool3d.default,
                                      args=[x3, [2, 2, 2]])
    yield "adaptive_max_pool3d", dict(fn=aten.adaptive_max_pool3d.default,
                                      args=[x3, [2, 2, 2]])
    yield "fractional_max_pool2d", dict(
        fn=aten.fractional_max_pool2d.default,
        args=[t(1, 1, 5, 5, dtype=h), [2, 2], [3, 3],
              torch.rand(1, 1, 2).to(h)])
    yield "fractional_max_pool3d", dict(
        fn=aten.fractional_max_pool3d.default,
        args=[t(1, 1, 5, 5, 5, dtype=h), [2, 2, 2], [3, 3, 3],
              torch.rand(1, 1, 3).to(h)])
    for pad, x, p in (("reflection_pad1d", t(1, 2, 5, dtype=h), [1, 1]),
                      ("reflection_pad2d", x2, [1, 1, 1, 1]),
                      ("replication_pad1d", t(1, 2, 5, dtype=h), [1, 2]),
                      ("replication_pad2d", x2, [1, 1, 2, 0]),
                      ("replication_pad3d", x3, [1, 1, 1, 1, 1, 1])):
        yield pad, dict(fn=getattr(aten, pad).default, args=[x, p])
    grid2 = (torch.rand(1, 3, 3, 2) * 2 - 1).to(h)
    grid3 = (torch.rand(1, 2, 2, 2, 3) * 2 - 1).to(h)
    yield "grid_sampler", dict(fn=aten.grid_sampler.default,
                               args=[x2, grid2, 0, 0, False])
    yield "grid_sampler_2d", dict(fn=aten.grid_sampler_2d.default,
                                  args=[x2, grid2, 0, 0, False])
    yield "_grid_sampler_2d_cpu_fallback", dict(
        fn=aten._grid_sampler_2d_cpu_fallback.default,
        args=[x2, grid2, 1, 1, True])
    yield "grid_sampler_3d", dict(fn=aten.grid_sampler_3d.default,
                                  args=[x3, grid3, 0, 0, False])
    yield "fake_quantize_per_tensor_affine", dict(
        fn=aten.fake_quantize_per_tensor_affine.default,
        args=[t(3, 4, dtype=h), 0.1, 0, 0, 255])


def fp32_loss_cases():
    h = LP
    a, b = t(3, 5, dtype=h), t(3, 5, low=0.1).to(h)
    y = torch.tensor([1.0, -1.0, 1.0]).to(h)
    target = torch.tensor([1, 0, 4])
    probs = torch.sigmoid(t(3, 5)).to(h)
    logp = torch.log_softmax(t(3, 5), 1).to(h)
    yield "mse_loss", dict(fn=aten.mse_loss.default, args=[a, b, 1])
    yield "l1_loss", dict(fn=aten.l1_loss.default, args=[a, b, 1])
    yield "smooth_l1_loss", dict(fn=aten.smooth_l1_loss.default,
                                 args=[a, b, 1, 1.0])
    yield "huber_loss", dict(fn=aten.huber_loss.default, args=[a, b, 1, 1.0])
    yield "kl_div", dict(fn=aten.kl_div.default, args=[logp, probs, 1],
                         kwargs=dict(log_target=False))
    yield "poisson_nll_loss", dict(fn=aten.poisson_nll_loss.default,
                                   args=[a, b, True, False, 1e-8, 1])
    yield "binary_cross_entropy", dict(fn=aten.binary_cross_entropy.default,
                                       args=[probs, probs.round(), None, 1])
    yield "binary_cross_entropy_with_logits", dict(
        fn=aten.binary_cross_entropy_with_logits.default,
        args=[a, probs.round(), None, None, 1])
    yield "cosine_embedding_loss", dict(
        fn=aten.cosine_embedding_loss.default, args=[a, b, y, 0.0, 1])
    yield "margin_ranking_loss", dict(fn=aten.margin_ranking_loss.default,
                                      args=[a[:, 0], b[:, 0], y, 0.0, 1])
    yield "hinge_embedding_loss", dict(
        fn=aten.hinge_embedding_loss.default, args=[a, (a > 0).to(h), 1.0, 1])
    yield "soft_margin_loss", dict(fn=aten.soft_margin_loss.default,
                                   args=[a, torch.sign(a), 1])
    yield "triplet_margin_loss", dict(
        fn=aten.triplet_margin_loss.default,
        args=[a, b, t(3, 5, dtype=h), 1.0, 2.0, 1e-6, False, 1])
    yield "multi_margin_loss", dict(fn=aten.multi_margin_loss.default,
                                    args=[a, target, 1, 1.0, None, 1])
    labels = torch.tensor([[3, 0, -1, 1, 2]] * 3)
    yield "multilabel_margin_loss", dict(
        fn=aten.multilabel_margin_loss.default, args=[a, labels, 1])
    yield "multilabel_margin_loss_forward", dict(
        fn=aten.multilabel_margin_loss_forward.default, args=[a, labels, 1])
    yield "nll_loss", dict(fn=aten.nll_loss.default,
                           args=[logp, target, None, 1, -100])
    yield "nll_loss2d", dict(fn=aten.nll_loss2d.default,
                             args=[t(1, 5, 2, 2, dtype=h),
                                   torch.tensor([[[0, 1], [2, 4]]]),
                                   None, 1, -100])
    yield "cross_entropy_loss", dict(fn=aten.cross_entropy_loss.default,
                                     args=[a, target, None, 1, -100, 0.0])
    log_probs = torch.log_softmax(t(6, 2, 4), 2).to(h)
    ctc_targets = torch.tensor([[1, 2], [3, 1]])
    yield "ctc_loss.IntList", dict(fn=aten.ctc_loss.IntList,
                                   args=[log_probs, ctc_targets, [6, 5],
                                         [2, 2], 0, 1, False])
    yield "ctc_loss.Tensor", dict(fn=aten.ctc_loss.Tensor,
                                  args=[log_probs, ctc_targets,
                                        torch.tensor([6, 5]),
                                        torch.tensor([2, 2]), 0, 1, False])


def fp32_math_cases():
    h = LP
    x = t(3, 4, dtype=h)
    q = torch.tensor([0.25, 0.5]).to(h)
    yield "prod", dict(fn=aten.prod.default, args=[x])
    yield "prod.dim_int", dict(fn=aten.prod.dim_int, args=[x, 1, False])
    if hasattr(torch.Tensor, "refine_names"):  # named tensors: not in 2.13
        yield "prod.dim_Dimname", dict(fn=lambda v: v.prod("a"),
                                       args=[named(x, "a", "b")], named=True)
    yield "quantile", dict(fn=aten.quantile.default, args=[x, q, None, False])
    yield "quantile.scalar", dict(fn=aten.quantile.scalar,
                                  args=[x, 0.5, 1, False],
                                  kwargs=dict(interpolation="linear"))
    yield "nanquantile", dict(fn=aten.nanquantile.default,
                              args=[x, q, None, False])
    yield "nanquantile.scalar", dict(fn=aten.nanquantile.scalar,
                                     args=[x, 0.5, None, False],
                                     kwargs=dict(interpolation="lower"))
    yield "cdist", dict(fn=aten.cdist.default,
                        args=[t(3, 4, dtype=h), t(5, 4, dtype=h), 2.0, None])
    yield "trace", dict(fn=aten.trace.default, args=[t(3, 3, dtype=h)])
    yield "polar", dict(fn=aten.polar.default,
                        args=[t(3, low=0.1).to(h), t(3, dtype=h)])
    yield "view_as_complex", dict(fn=aten.view_as_complex.default,
                                  args=[t(3, 2, dtype=h)])
    signal = t(64, dtype=h)
    yield "stft", dict(fn=aten.stft.default,
                       args=[signal, 16, 4, 16, None, False, True, True])
    yield "stft.center", dict(fn=aten.stft.center,
                              args=[signal, 16, 4, 16, None, True, "reflect",
                                    False, True, True])
    for name in ("fft_fft", "fft_ifft", "fft_rfft", "fft_irfft", "fft_hfft",
                 "fft_ihfft"):
        yield name, dict(fn=getattr(aten, name).default,
                         args=[t(8, dtype=h), None, -1, None])
    for name in ("fft_fft2", "fft_ifft2", "fft_rfft2", "fft_irfft2"):
        yield name, dict(fn=getattr(aten, name).default,
                         args=[t(4, 6, dtype=h), None, [-2, -1], None])
    for name in ("fft_fftn", "fft_ifftn", "fft_rfftn", "fft_irfftn"):
        yield name, dict(fn=getattr(aten, name).default,
                         args=[t(2, 4, 6, dtype=h), None, None, None])


def fp32_linalg_cases():
    h = LP
    m, s = t(3, 3, dtype=h), spd(3, h)
    lower = torch.linalg.cholesky(spd(3, F32)).to(h)
    geqrf_a, tau = torch.geqrf(t(4, 3))
    if hasattr(aten, "cholesky"):  # gone in 2.14
        yield "cholesky", dict(fn=aten.cholesky.default, args=[s, False])
    yield "cholesky_inverse", dict(fn=aten.cholesky_inverse.default,
                                   args=[lower, False])
    yield "cholesky_solve", dict(fn=aten.cholesky_solve.default,
                                 args=[t(3, 2, dtype=h), lower, False])
    yield "inverse", dict(fn=aten.inverse.default, args=[s])
    lu, pivots = lu_parts(h)
    yield "lu_solve", dict(fn=aten.lu_solve.default,
                           args=[t(3, 2, dtype=h), lu, pivots])
    yield "orgqr", dict(fn=aten.orgqr.default, args=[geqrf_a.to(h), tau.to(h)])
    yield "ormqr", dict(fn=aten.ormqr.default,
                        args=[geqrf_a.to(h), tau.to(h), t(4, 2, dtype=h),
                              True, False])
    yield "pinverse", dict(fn=aten.pinverse.default, args=[m, 1e-15])
    yield "linalg_cond", dict(fn=aten.linalg_cond.default, args=[s, None])
    yield "linalg_cond.p_str", dict(fn=aten.linalg_cond.p_str,
                                    args=[s, "fro"])
    yield "linalg_matrix_rank", dict(fn=aten.linalg_matrix_rank.default,
                                     args=[m, 0.01, False])
    yield "linalg_matrix_rank.tol_tensor", dict(
        fn=aten.linalg_matrix_rank.tol_tensor,
        args=[m, torch.tensor(0.01).to(h), False])
    yield "linalg_matrix_rank.atol_rtol_tensor", dict(
        fn=aten.linalg_matrix_rank.atol_rtol_tensor, args=[m],
        kwargs=dict(atol=torch.tensor(0.01).to(h), rtol=None))
    yield "linalg_matrix_rank.atol_rtol_float", dict(
        fn=aten.linalg_matrix_rank.atol_rtol_float, args=[m],
        kwargs=dict(atol=0.01, rtol=None))
    yield "linalg_matrix_norm", dict(fn=aten.linalg_matrix_norm.default,
                                     args=[m, 1, [-2, -1], False])
    yield "linalg_matrix_norm.str_ord", dict(
        fn=aten.linalg_matrix_norm.str_ord, args=[m, "fro", [-2, -1], False])
    yield "linalg_solve", dict(fn=aten.linalg_solve.default,
                               args=[s, t(3, 2, dtype=h)],
                               kwargs=dict(left=True))
    yield "linalg_cholesky", dict(fn=aten.linalg_cholesky.default, args=[s])
    yield "linalg_cholesky_ex", dict(fn=aten.linalg_cholesky_ex.default,
                                     args=[s], kwargs=dict(upper=False))
    yield "linalg_svdvals", dict(fn=aten.linalg_svdvals.default, args=[m])
    yield "linalg_svd", dict(fn=aten.linalg_svd.default, args=[m, True])
    yield "svd", dict(fn=aten.svd.default, args=[m, True, True])
    yield "linalg_eigvals", dict(fn=aten.linalg_eigvals.default, args=[s])
    yield "linalg_eig", dict(fn=aten.linalg_eig.default, args=[s])
    yield "linalg_eigvalsh", dict(fn=aten.linalg_eigvalsh.default,
                                  args=[s, "L"])
    yield "linalg_eigh", dict(fn=aten.linalg_eigh.default, args=[s, "L"])
    if hasattr(aten, "linalg_matrix_sqrth"):  # new in 2.14
        yield "linalg_matrix_sqrth", dict(
            fn=aten.linalg_matrix_sqrth.default, args=[s])
    if hasattr(aten, "symeig"):  # gone after 1.13
        yield "symeig", dict(fn=aten.symeig.default, args=[s, True, True])
    yield "linalg_inv", dict(fn=aten.linalg_inv.default, args=[s])
    yield "linalg_inv_ex", dict(fn=aten.linalg_inv_ex.default, args=[s],
                                kwargs=dict(check_errors=False))
    yield "linalg_householder_product", dict(
        fn=aten.linalg_householder_product.default,
        args=[geqrf_a.to(h), tau.to(h)])
    yield "linalg_tensorinv", dict(fn=aten.linalg_tensorinv.default,
                                   args=[spd(4, h).reshape(4, 2, 2), 1])
    yield "linalg_tensorsolve", dict(
        fn=aten.linalg_tensorsolve.default,
        args=[spd(6, h).reshape(2, 3, 6), t(2, 3, dtype=h), None])
    yield "linalg_lstsq", dict(fn=aten.linalg_lstsq.default,
                               args=[t(4, 3, dtype=h), t(4, 2, dtype=h),
                                     None])
    yield "linalg_qr", dict(fn=aten.linalg_qr.default, args=[m, "reduced"])
    if hasattr(aten, "qr"):  # gone in 2.14
        yield "qr", dict(fn=aten.qr.default, args=[m, True])
    yield "geqrf", dict(fn=aten.geqrf.default, args=[t(4, 3, dtype=h)])
    yield "_lu_with_info", dict(fn=aten._lu_with_info.default,
                                args=[s, True, False])
    yield "triangular_solve", dict(fn=aten.triangular_solve.default,
                                   args=[t(3, 2, dtype=h), lower, False,
                                         False, False])


def promote_cases():
    # the other half type: an unexpected one for prioritize()
    h, f16 = LP, (F16 if LP == BF16 else BF16)
    index = torch.tensor([0, 2])
    # stack casts to the widest; 1.13's cat wrapper casts nothing
    for a, b in ((h, F32), (F32, h), (f16, f16), (f16, F32), (h, h)):
        yield "stack", dict(fn=aten.stack.default,
                            args=[[t(2, 3, dtype=a), t(2, 3, dtype=b)], 0])
        yield "cat", dict(fn=aten.cat.default,
                          args=[[t(2, 3, dtype=a), t(2, 3, dtype=b)], 0])
    for a, b in ((h, F32), (F32, h), (f16, F32), (h, h)):
        yield "index_copy", dict(fn=aten.index_copy.default,
                                 args=[t(4, 3, dtype=a), 0, index,
                                       t(2, 3, dtype=b)])
    # 1.13's kernel is NYI ("does not yet support"), after the casts;
    # 2.13 has no Dimname overloads
    if "dimname" not in aten.index_copy.overloads():
        return
    yield "index_copy.dimname", dict(
        fn=aten.index_copy.dimname,
        args=[t(4, 3, dtype=h), "dimname::a", index, t(2, 3)],
        raises="does not yet support")


def lp_cases_2x():
    """The CPU lower_precision_fp rows 2.x added (prelu, attention...)."""
    if torch.__version__.startswith("1."):
        return
    q, k, v = t(1, 2, 4, 8), t(1, 2, 4, 8), t(1, 2, 4, 8)
    yield "linalg_vecdot", dict(fn=aten.linalg_vecdot.default,
                                args=[t(3, 4), t(3, 4)])
    yield "_addmm_activation", dict(fn=aten._addmm_activation.default,
                                    args=[t(3, 5), t(3, 4), t(4, 5)])
    yield "prelu", dict(fn=aten.prelu.default, args=[t(2, 3, 4), t(3)])
    yield "scaled_dot_product_attention", dict(
        fn=aten.scaled_dot_product_attention.default, args=[q, k, v])
    embed = 8
    qkv_weight, qkv_bias = t(3 * embed, embed), t(3 * embed)
    proj_weight, proj_bias = t(embed, embed), t(embed)
    q, k, v = t(2, 4, embed), t(2, 4, embed, low=0), t(2, 4, embed, low=1)
    yield "_native_multi_head_attention", dict(
        fn=aten._native_multi_head_attention.default,
        args=[q, k, v, embed, 2, qkv_weight, qkv_bias, proj_weight,
              proj_bias])
    # one LSTM layer through oneDNN: input, 4 weights, hx, cx, reverse,
    # batch_sizes, mode (LSTM = 2), hidden, layers, bias, bidirectional,
    # batch_first, train
    hidden = 4
    yield "mkldnn_rnn_layer", dict(
        fn=aten.mkldnn_rnn_layer.default,
        args=[t(3, 2, 5), t(4 * hidden, 5), t(4 * hidden, hidden),
              t(4 * hidden), t(4 * hidden), t(2, hidden), t(2, hidden),
              False, [], 2, hidden, 1, True, False, False, False],
        compare=3)  # the fourth output is oneDNN's scratch workspace
    h = LP
    yield "conv_transpose1d", dict(fn=aten.conv_transpose1d.default,
                                   args=[t(1, 2, 5), t(2, 3, 3, dtype=h)])
    yield "conv_transpose2d.input", dict(
        fn=aten.conv_transpose2d.input, args=[t(1, 2, 5, 5), t(2, 3, 3, 3)])
    yield "conv_transpose3d.input", dict(
        fn=aten.conv_transpose3d.input,
        args=[t(1, 2, 3, 3, 3), t(2, 3, 2, 2, 2), t(3)])


def cases(lp=BF16, rows=None):
    """Every case for autocast dtype `lp` whose label is in `rows` (the
    table's labels; None: all)."""
    global LP
    LP = lp
    for group in (lp_cases, fp32_nn_cases, fp32_loss_cases, fp32_math_cases,
                  fp32_linalg_cases, promote_cases, lp_cases_2x):
        for label, case in group():
            if rows is None or "aten::" + label in rows:
                yield label, case


def cuda_only_cases():
    """Calls of CUDA rows the CPU cases do not reach (fp32_set_opt_dtype,
    fp32_append_dtype, CUDA-only fp32 and promote ops), for the check on
    FakeTensors of device cuda.  Inputs f16: what CUDA autocast leaves
    alone or widens."""
    h = F16
    x = t(3, 4, dtype=h)
    yield "softmax.int", dict(fn=aten.softmax.int, args=[x, 1])
    yield "log_softmax.int", dict(fn=aten.log_softmax.int, args=[x, 1])
    yield "sum", dict(fn=aten.sum.default, args=[x])
    yield "sum.dim_IntList", dict(fn=aten.sum.dim_IntList, args=[x, [1]])
    yield "prod", dict(fn=aten.prod.default, args=[x])
    yield "cumsum", dict(fn=aten.cumsum.default, args=[x, 1])
    yield "cumprod", dict(fn=aten.cumprod.default, args=[x, 1])
    yield "norm.Scalar", dict(fn=aten.norm.Scalar, args=[x, 2])
    yield "norm.ScalarOpt_dim", dict(fn=aten.norm.ScalarOpt_dim,
                                     args=[x, 2, [1]])
    yield "exp", dict(fn=aten.exp.default, args=[x])
    yield "layer_norm", dict(fn=aten.layer_norm.default, args=[x, [4]])
    yield "group_norm", dict(fn=aten.group_norm.default,
                             args=[t(2, 4, 3, dtype=h), 2])
    yield "rms_norm", dict(fn=aten.rms_norm.default, args=[x, [4]])
    yield "addcmul", dict(fn=aten.addcmul.default,
                          args=[t(3, 4), x, t(3, 4, dtype=h)])
    yield "dot", dict(fn=aten.dot.default, args=[t(4, dtype=h), t(4)])
    yield "atan2", dict(fn=aten.atan2.default, args=[x, t(3, 4)])
    yield "upsample_nearest2d", dict(fn=aten.upsample_nearest2d.default,
                                     args=[t(1, 1, 2, 2, dtype=h), [4, 4]])
    for name in ("acos", "asin", "cosh", "erfinv", "expm1", "log", "log10",
                 "log2", "log1p", "reciprocal", "rsqrt", "sinh", "tan",
                 "softplus"):
        yield name, dict(fn=getattr(aten, name).default,
                         args=[t(3, 4, dtype=h, low=0.1) / 2])
    yield "pow.Tensor_Scalar", dict(fn=aten.pow.Tensor_Scalar, args=[x, 2])
    yield "pow.Tensor_Tensor", dict(fn=aten.pow.Tensor_Tensor, args=[x, x])
    yield "pow.Scalar", dict(fn=aten.pow.Scalar, args=[2.0, x])
    yield "logsumexp", dict(fn=aten.logsumexp.default, args=[x, [1]])
    yield "dist", dict(fn=aten.dist.default, args=[x, t(3, 4, dtype=h)])
    yield "pdist", dict(fn=aten.pdist.default, args=[x])
    yield "renorm", dict(fn=aten.renorm.default, args=[x, 2, 0, 1.0])
    yield "cosine_similarity", dict(fn=aten.cosine_similarity.default,
                                    args=[x, t(3, 4, dtype=h)])
    yield "native_layer_norm", dict(fn=aten.native_layer_norm.default,
                                    args=[x, [4], None, None, 1e-5])
    yield "frobenius_norm.dim", dict(fn=aten.frobenius_norm.dim,
                                     args=[x, [0, 1]])
    yield "nuclear_norm", dict(fn=aten.nuclear_norm.default, args=[x])
    yield "upsample_bilinear2d", dict(
        fn=aten.upsample_bilinear2d.default,
        args=[t(1, 1, 2, 2, dtype=h), [4, 4], False])
    yield "binary_cross_entropy", dict(
        fn=aten.binary_cross_entropy.default,
        args=[torch.sigmoid(t(3, 4)), torch.ones(3, 4), None, 1])
