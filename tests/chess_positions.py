"""Chess test positions as FEN strings, for tests of chess search and tools.

MATE_IN_ONE: the side to move has at least one move that mates.
MATE_IN_TWO: the side to move mates in two moves against any defence, and
has no mate in one.

The lists carry no solutions: tests/test_chess_tools.py checks every position
with python-chess (legal, not over, mate found by search), so a wrong entry
fails there instead of silently weakening a test that imports it.
"""

MATE_IN_ONE = [
    # back-rank mates
    "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1",                # Ra8#
    "r5k1/8/8/8/8/8/5PPP/6K1 b - - 0 1",                # ...Ra1#
    "6k1/5ppp/8/8/8/8/5PPP/3Q2K1 w - - 0 1",            # Qd8#
    "3q2k1/5ppp/8/8/8/8/5PPP/6K1 b - - 0 1",            # ...Qd1#
    # opening traps
    "r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5Q2/PPPP1PPP/RNB1K1NR w KQkq - 4 4",  # scholar's mate Qxf7#
    "rnbqkbnr/pppp1ppp/8/4p3/6P1/5P2/PPPPP2P/RNBQKBNR b KQkq - 0 2",      # fool's mate ...Qh4#
    "rn1q1bnr/ppp1kB1p/3p2p1/4N3/4P3/2N5/PPPP1PPP/R1BbK2R w KQ - 1 7",    # Legal's mate Nd5#
    "1n2kb1r/p4ppp/4q3/4p1B1/4P3/8/PPP2PPP/2KR4 w k - 0 17",              # Morphy's opera game Rd8#
    # smothered mates
    "6rk/6pp/8/6N1/8/8/8/6K1 w - - 0 1",                # Nf7#
    "6k1/8/8/8/6n1/8/6PP/6RK b - - 0 1",                # ...Nf2#
    # queen mates
    "k7/8/1K6/8/8/8/8/6Q1 w - - 0 1",                   # Qg8# (king-supported)
    "7K/8/6k1/8/8/8/8/1q6 b - - 0 1",                   # ...Qb8#
    "1q6/8/8/8/8/6k1/8/7K b - - 0 1",                   # ...Qb1#
    "5rk1/5ppp/8/8/8/2B5/8/6QK w - - 0 1",              # Qxg7# (bishop-supported)
    "6qk/8/2b5/8/8/8/5PPP/5RK1 b - - 0 1",              # ...Qxg2#
    # rook and minor-piece patterns
    "4k3/7R/8/8/8/8/8/R5K1 w - - 0 1",                  # ladder Ra8#
    "7k/1R6/5N2/8/8/8/8/6K1 w - - 0 1",                 # Arabian mate Rh7#
    "6k1/8/8/8/8/5n2/1r6/7K b - - 0 1",                 # ...Rh2#
    "2kr4/p2n4/8/8/5B2/8/8/4KB2 w - - 0 1",             # Boden-style Ba6#
    # promotions that mate
    "6k1/4Pppp/8/8/8/8/8/6K1 w - - 0 1",                # e8=Q# (or =R)
    "1r4k1/P4ppp/8/8/8/8/8/6K1 w - - 0 1",              # axb8=Q#
    "6k1/8/8/8/8/8/p4PPP/6K1 b - - 0 1",                # ...a1=Q#
    "6bq/5P1k/6pp/8/8/8/8/B5K1 w - - 0 1",              # f8=N# (underpromotion)
    # special moves that mate
    "3rkr2/5p2/8/2NpP3/8/8/8/4R2K w - d6 0 2",          # exd6 e.p.#, discovered
    "2rkr3/2p1p3/8/8/8/8/8/R3K3 w Q - 0 1",             # O-O-O#
]

MATE_IN_TWO = [
    "4kb1r/p2n1ppp/4q3/4p1B1/4P3/1Q6/PPP2PPP/2KR4 w k - 1 16",  # opera game: Qb8+ Nxb8 Rd8#
    "r6k/6pp/7N/8/2Q5/8/8/6K1 w - - 0 1",               # Philidor: Qg8+ Rxg8 Nf7#
    "6k1/8/8/2q5/8/7n/6PP/R6K b - - 0 1",               # ...Qg1+ Rxg1 Nf2#
    "7k/8/8/8/8/8/R7/1R4K1 w - - 0 1",                  # Rb7, Ra8#
    "k7/8/2K5/8/8/8/8/7R w - - 0 1",                    # Kb6, Rh8#
    "7r/8/8/8/8/2k5/8/K7 b - - 0 1",                    # ...Kb3, ...Rh1#
]
