"""Command lines of the form `script.py OPTIONS -- TANDEM_OPTIONS`: the part
after "--" goes to tandem untouched (argparse's own "--" handling differs
across Python versions)."""


def parse_with_passthrough(parser, argv):
    """(parsed options before "--", the list after it; empty without one)."""
    if "--" not in argv:
        return parser.parse_args(argv), []
    cut = argv.index("--")
    return parser.parse_args(argv[:cut]), argv[cut + 1:]
