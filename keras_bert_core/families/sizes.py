"""The shape every family's presets share: BERT's sizes (Turc et al. / the BERT paper)."""


def bert_size(layers, hidden):
    """`layers` blocks `hidden` wide, heads 64 wide, a feed-forward four times as wide."""
    return {"num_layers": layers, "hidden_size": hidden, "num_heads": hidden // 64,
            "intermediate_size": 4 * hidden}
