#!/usr/bin/env python3
"""Hugging Face models exported by Optimum (`optimum.exporters.onnx.main_export`, the
`optimum-cli export onnx` path most transformer users take), with small configs and
seeded random weights: decoders, encoder-decoders, and encoders / vision / audio models
for one task each (feature extraction, classification, QA, fill-mask, segmentation, CTC,
CLIP). Decoders are exported `-with-past`: a KV cache as past_key_values.* inputs and
present.* outputs, position_ids and an attention mask over past + new tokens;
encoder-decoders as separate encoder / decoder files. Each model lands in OUT/opt_NAME/
(model.onnx or encoder_model.onnx + decoder_model*.onnx, config.json), ready for Optimum's
ORTModelFor* classes; `scripts/check_optimum_generate.py` generates from each with
onnxruntime and with Onyx and compares the tokens (the one-task models: their outputs).
Needs: python3 -m venv VENV && VENV/bin/pip install torch transformers optimum-onnx onnxruntime
Usage: VENV/bin/python scripts/make_optimum_models.py OUT [NAME ...]
(whisper_tiny, llama_base4 only when named; NAME_o2: optimized by ONNX Runtime's
transformer optimizer at Optimum's level O2)"""
import os
import sys
import tempfile

import torch
import transformers as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_each import export_each  # noqa: E402

SMALL = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, vocab_size=1000)
VISION = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, image_size=64,
              patch_size=8)
DECODER_TASK = 'text-generation-with-past'
SEQ2SEQ_TASK = 'text2text-generation-with-past'
SPEECH_TASK = 'automatic-speech-recognition-with-past'


def whisper_config(width, layers, heads, ffn, vocab, tokens, max_target=448):
    """tokens: (decoder start, pad, eos, bos) ids."""
    start, pad, eos, bos = tokens
    return tf.WhisperConfig(d_model=width, encoder_layers=layers, decoder_layers=layers, encoder_attention_heads=heads,
                            decoder_attention_heads=heads, encoder_ffn_dim=ffn, decoder_ffn_dim=ffn, vocab_size=vocab,
                            num_mel_bins=80, max_source_positions=1500, max_target_positions=max_target,
                            decoder_start_token_id=start, pad_token_id=pad, eos_token_id=eos, bos_token_id=bos,
                            begin_suppress_tokens=None, suppress_tokens=None)


# name -> (config, model class, Optimum task)
MODELS = {
    'gpt2': (lambda: tf.GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=1000, n_positions=256),
             tf.GPT2LMHeadModel, DECODER_TASK),
    'llama': (lambda: tf.LlamaConfig(**SMALL, num_key_value_heads=2, max_position_embeddings=256),
              tf.LlamaForCausalLM, DECODER_TASK),
    'mistral': (lambda: tf.MistralConfig(**SMALL, num_key_value_heads=2, max_position_embeddings=256,
                                         sliding_window=8),
                tf.MistralForCausalLM, DECODER_TASK),
    'qwen2': (lambda: tf.Qwen2Config(**SMALL, num_key_value_heads=2, max_position_embeddings=256),
              tf.Qwen2ForCausalLM, DECODER_TASK),
    'phi3': (lambda: tf.Phi3Config(**SMALL, num_key_value_heads=4, max_position_embeddings=256, pad_token_id=0),
             tf.Phi3ForCausalLM, DECODER_TASK),
    'gemma': (lambda: tf.GemmaConfig(**SMALL, num_key_value_heads=1, head_dim=16, max_position_embeddings=256),
              tf.GemmaForCausalLM, DECODER_TASK),
    'gpt_neox': (lambda: tf.GPTNeoXConfig(**SMALL, max_position_embeddings=256), tf.GPTNeoXForCausalLM,
                 DECODER_TASK),
    'opt': (lambda: tf.OPTConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, ffn_dim=128,
                                 vocab_size=1000, word_embed_proj_dim=64, max_position_embeddings=256),
            tf.OPTForCausalLM, DECODER_TASK),
    'bloom': (lambda: tf.BloomConfig(hidden_size=64, n_layer=2, n_head=4, vocab_size=1000), tf.BloomForCausalLM,
              DECODER_TASK),
    'falcon': (lambda: tf.FalconConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                       vocab_size=1000, new_decoder_architecture=False, multi_query=True),
               tf.FalconForCausalLM, DECODER_TASK),
    't5': (lambda: tf.T5Config(d_model=64, d_ff=128, num_layers=2, num_decoder_layers=2, num_heads=4, d_kv=16,
                               vocab_size=1000, decoder_start_token_id=0),
           tf.T5ForConditionalGeneration, SEQ2SEQ_TASK),
    'bart': (lambda: tf.BartConfig(d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                                   decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128,
                                   vocab_size=1000, max_position_embeddings=256),
             tf.BartForConditionalGeneration, SEQ2SEQ_TASK),
    'whisper': (lambda: whisper_config(64, 2, 4, 128, 1000, (1, 0, 2, 1), max_target=64),
                tf.WhisperForConditionalGeneration, SPEECH_TASK),
    # Encoders and vision / audio models, one Optimum task each (compared on one forward pass).
    'bert': (lambda: tf.BertConfig(**SMALL), tf.BertModel, 'feature-extraction'),
    'roberta': (lambda: tf.RobertaConfig(**SMALL), tf.RobertaForSequenceClassification, 'text-classification'),
    'distilbert': (lambda: tf.DistilBertConfig(dim=64, n_layers=2, n_heads=4, hidden_dim=128, vocab_size=1000),
                   tf.DistilBertForQuestionAnswering, 'question-answering'),
    'deberta_v2': (lambda: tf.DebertaV2Config(**SMALL), tf.DebertaV2ForTokenClassification, 'token-classification'),
    'electra': (lambda: tf.ElectraConfig(**SMALL, embedding_size=32), tf.ElectraForMaskedLM, 'fill-mask'),
    'vit': (lambda: tf.ViTConfig(**VISION), tf.ViTForImageClassification, 'image-classification'),
    'swin': (lambda: tf.SwinConfig(image_size=64, patch_size=4, embed_dim=32, depths=[1, 1], num_heads=[2, 4],
                                   window_size=4),
             tf.SwinForImageClassification, 'image-classification'),
    'segformer': (lambda: tf.SegformerConfig(num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1],
                                             hidden_sizes=[16, 32], num_attention_heads=[1, 2],
                                             decoder_hidden_size=32, image_size=64),
                  tf.SegformerForSemanticSegmentation, 'semantic-segmentation'),
    'clip': (lambda: tf.CLIPConfig(text_config=SMALL, vision_config=VISION, projection_dim=32), tf.CLIPModel,
             'zero-shot-image-classification'),
    'wav2vec2': (lambda: tf.Wav2Vec2Config(**SMALL, conv_dim=(32, 32), conv_stride=(5, 2), conv_kernel=(10, 3),
                                           num_feat_extract_layers=2, num_conv_pos_embeddings=16,
                                           num_conv_pos_embedding_groups=4),
                 tf.Wav2Vec2ForCTC, 'automatic-speech-recognition'),
    # Whisper-tiny's sizes (384 wide, 6 heads of 64, 4 + 4 layers), for timing the encoder's
    # 1500-frame attention; only when named.
    'whisper_tiny': (lambda: whisper_config(384, 4, 6, 1536, 51865, (50258, 50257, 50257, 50257)),
                     tf.WhisperForConditionalGeneration, SPEECH_TASK),
    # A Llama at a small real width (768, 4 layers, 12 query / 4 KV heads, 32k vocabulary),
    # for timing decode steps; only when named.
    'llama_base4': (lambda: tf.LlamaConfig(hidden_size=768, num_hidden_layers=4, num_attention_heads=12,
                                           num_key_value_heads=4, intermediate_size=2048, vocab_size=32000,
                                           max_position_embeddings=1024),
                    tf.LlamaForCausalLM, DECODER_TASK),
}
ON_REQUEST = {'whisper_tiny', 'llama_base4'}
O2 = ['gpt2', 'llama', 't5', 'bart', 'whisper']  # also made as NAME_o2 (see export)


def export(name, out):
    """NAME, or NAME_o2: the same model through ONNX Runtime's transformer optimizer at
    Optimum's level O2 (com.microsoft Attention, SkipLayerNormalization, BiasGelu, ...)."""
    from optimum.exporters.onnx import main_export
    arch, optimize = (name[:-3], 'O2') if name.endswith('_o2') else (name, None)
    config, model_class, task = MODELS[arch]
    torch.manual_seed(0)
    model = model_class(config()).eval()
    with tempfile.TemporaryDirectory() as src:
        model.save_pretrained(src)
        main_export(src, output=os.path.join(out, f'opt_{name}'), task=task, optimize=optimize)


if __name__ == '__main__':
    plain = [n for n in MODELS if n not in ON_REQUEST]
    out, names = sys.argv[1], sys.argv[2:] or plain + [f'{n}_o2' for n in O2]
    export_each(out, names, export)
