"""The chat template a student is trained and served with, for base models that have none.

MAC-SQL's authors tuned CodeLlama-7b-hf, a base model without a chat template, with an
Alpaca-style layout. `macsql train` gives such a model this template, trains on it, and writes
it beside the adapter (``chat_template.jinja``, also in ``tokenizer_config``), so that vLLM
(``--chat-template``) and llama.cpp (``--jinja --chat-template-file``) render a served request
exactly as training rendered the prompt.

The layout: an optional system text, then ``### Instruction:`` for each user turn and
``### Response:`` for each assistant turn; an assistant turn ends with the EOS token, so the
student learns to stop. Rendering the prompt with the generation prompt gives a prefix of the
prompt rendered with its completion, which is what TRL's completion-only loss needs. The
template uses only plain Jinja (no ``{% generation %}`` tags, which llama.cpp's engine does not
know): the loss mask comes from the prompt/completion split, not from the template.
"""

from __future__ import annotations

ALPACA_CHAT_TEMPLATE = (
    "{{- bos_token -}}"
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'system' -%}"
    "{{- message['content'] + '\\n\\n' -}}"
    "{%- elif message['role'] == 'user' -%}"
    "{{- '### Instruction:\\n' + message['content'] + '\\n\\n' -}}"
    "{%- elif message['role'] == 'assistant' -%}"
    "{{- '### Response:\\n' + message['content'] + eos_token -}}"
    "{%- if not loop.last -%}{{- '\\n\\n' -}}{%- endif -%}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '### Response:\\n' -}}{%- endif -%}"
)
