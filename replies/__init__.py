"""macsql.replies: reading what a model answered.

`reader` finds the SQL or the JSON object in a reply, whatever layout the model used;
`agents` turns one agent's reply into state (SQL, fields, fallbacks); `schemas` are the answer
shapes asked for with `reply_format="structured"`.
"""
