"""The zoo's models: real library models built from tiny configs with
random weights (nothing downloaded), each with a training loop of a few
steps under CPU bf16 autocast, as their libraries' users write them.

MODELS[name](steps) -> the losses of `steps` training steps, as floats.
"""
import os
import tempfile

import torch

SEQUENCE, BATCH, VOCAB = 16, 2, 128


def tokens(seed):
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, VOCAB, (BATCH, SEQUENCE), generator=generator)


def causal_lm_steps(model, steps, lr=1e-3):
    """The plain PyTorch loop of a model taking input_ids and labels (a
    causal LM, or T5 copying its input): forward and loss under autocast,
    backward and the optimizer's step outside it."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    losses = []
    for step in range(steps):
        ids = tokens(step)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses


def gpt2_config():
    from transformers import GPT2Config
    return GPT2Config(vocab_size=VOCAB, n_positions=32, n_embd=32, n_layer=2,
                      n_head=2, resid_pdrop=0.0, embd_pdrop=0.0,
                      attn_pdrop=0.0)


def gpt2():
    from transformers import GPT2LMHeadModel
    torch.manual_seed(0)
    return GPT2LMHeadModel(gpt2_config())


def train_gpt2(steps):
    return causal_lm_steps(gpt2(), steps)


def eval_gpt2(steps):
    """A training step, then evaluation as eval and generation loops run
    it, under torch.inference_mode: there autocast's casts reach a
    dispatch mode as aten.to.dtype, not _to_copy (no autograd key
    decomposes `to`), and torch 2.11+ caches none of them.  The
    evaluation's losses."""
    model = gpt2()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for step in range(steps):
        ids = tokens(step)
        model.train()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        model.eval()
        with torch.inference_mode(), \
                torch.autocast("cpu", dtype=torch.bfloat16):
            losses.append(model(input_ids=ids, labels=ids).loss.item())
    return losses


def train_llama(steps):
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
        num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
        max_position_embeddings=32))
    return causal_lm_steps(model, steps)


def train_bert(steps):
    """Masked LM: a quarter of the tokens masked, the rest ignored."""
    from transformers import BertConfig, BertForMaskedLM
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=32, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for step in range(steps):
        ids = tokens(step)
        labels = ids.clone()
        masked = torch.arange(SEQUENCE) % 4 == 0
        labels[:, ~masked] = -100
        inputs = ids.masked_fill(masked, 3)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(input_ids=inputs, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses


def train_t5(steps):
    """Encoder-decoder: the decoder learns to copy the encoder's input."""
    from transformers import T5Config, T5ForConditionalGeneration
    torch.manual_seed(0)
    model = T5ForConditionalGeneration(T5Config(
        vocab_size=VOCAB, d_model=32, d_kv=16, d_ff=64, num_layers=2,
        num_heads=2, dropout_rate=0.0, decoder_start_token_id=0))
    return causal_lm_steps(model, steps)


def train_lora(steps):
    """PEFT LoRA on the GPT-2: only the adapters train."""
    from peft import LoraConfig, get_peft_model
    model = gpt2()
    torch.manual_seed(1)
    model = get_peft_model(model, LoraConfig(
        r=4, lora_alpha=8, lora_dropout=0.0, target_modules=["c_attn"],
        fan_in_fan_out=True))
    return causal_lm_steps(model, steps)


def train_timm(name, steps, **config):
    import timm
    torch.manual_seed(0)
    model = timm.create_model(name, pretrained=False, num_classes=10,
                              **config)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    losses = []
    for step in range(steps):
        generator = torch.Generator().manual_seed(step)
        images = torch.randn(BATCH, 3, 32, 32, generator=generator)
        labels = torch.randint(0, 10, (BATCH,), generator=generator)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses


def train_vit(steps):
    return train_timm("vit_tiny_patch16_224", steps, img_size=32,
                      patch_size=8, embed_dim=32, depth=2, num_heads=2)


def train_resnet(steps):
    return train_timm("resnet10t", steps)


def train_convnext(steps):
    return train_timm("convnext_atto", steps)


def lm_batches(steps):
    return [{"input_ids": tokens(step), "labels": tokens(step)}
            for step in range(steps)]


def train_lightning(steps):
    """Lightning's Trainer(precision="bf16-mixed") on the GPT-2."""
    import lightning as L

    losses = []

    class LM(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.model = gpt2()

        def training_step(self, batch, index):
            loss = self.model(input_ids=batch["input_ids"],
                              labels=batch["labels"]).loss
            losses.append(loss.item())
            return loss

        def configure_optimizers(self):
            return torch.optim.AdamW(self.parameters(), lr=1e-3)

    module = LM()
    trainer = L.Trainer(accelerator="cpu", devices=1, max_steps=steps,
                        precision="bf16-mixed", logger=False,
                        enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False,
                        default_root_dir=tempfile.mkdtemp())
    loader = torch.utils.data.DataLoader(lm_batches(steps), batch_size=None)
    trainer.fit(module, loader)
    return losses


def train_accelerate(steps):
    """accelerate's Accelerator(mixed_precision="bf16") on the GPT-2."""
    from accelerate import Accelerator
    accelerator = Accelerator(mixed_precision="bf16", cpu=True)
    model = gpt2()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, optimizer = accelerator.prepare(model, optimizer)
    losses = []
    for batch in lm_batches(steps):
        loss = model(**batch).loss
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses


def train_hf_trainer(steps):
    """The HF Trainer with bf16=True on the CPU, on the GPT-2."""
    from transformers import Trainer, TrainingArguments

    losses = []

    class Recording(Trainer):
        def compute_loss(self, model, inputs, *args, **kwargs):
            loss = super().compute_loss(model, inputs, *args, **kwargs)
            losses.append((loss[0] if isinstance(loss, tuple)
                           else loss).item())
            return loss

    data = [{"input_ids": tokens(step)[0], "labels": tokens(step)[0]}
            for step in range(steps * BATCH)]
    args = TrainingArguments(
        output_dir=tempfile.mkdtemp(), max_steps=steps, bf16=True,
        use_cpu=True, per_device_train_batch_size=BATCH, report_to=[],
        save_strategy="no", logging_strategy="no", dataloader_num_workers=0,
        disable_tqdm=True, seed=0, data_seed=0)
    Recording(model=gpt2(), args=args, train_dataset=data).train()
    return losses


MODELS = {
    "gpt2": train_gpt2, "gpt2_eval": eval_gpt2, "llama": train_llama, "bert": train_bert,
    "t5": train_t5, "lora": train_lora, "vit": train_vit,
    "resnet": train_resnet, "convnext": train_convnext,
    "lightning": train_lightning, "accelerate": train_accelerate,
    "hf_trainer": train_hf_trainer,
}
# timm's models need the interpreter with torchvision (timm imports it)
VISION = {"vit", "resnet", "convnext"}

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
