"""devtools.same_program's comparisons: what counts as the same compiled program."""

from devtools.same_program import named_alike, numbered_alike

# A fragment of an optimised HLO program (instruction lines only, as the tool keeps them).
PROGRAM = [
    "%fused_computation (param_0: u32[32]) -> u32[32,2] {",
    "  %param_0 = u32[32]{0} parameter(0)",
    "  ROOT %bitcast = u32[32,2]{1,0} bitcast(%param_0)",
    "ENTRY %main.3 (Arg_0.1: u32[32]) -> u32[32,2] {",
    "  %select_leaves = u32[32]{0} get-tuple-element(%while.7), index=2",
    "  %fusion.2 = u32[32,2]{1,0} fusion(%select_leaves, %select_leaves), kind=kLoop, "
    "calls=%fused_computation",
    "  ROOT %while.7 = (u32[32]) while(%fusion.2), condition=%cond, body=%body",
]


def renamed(lines, old, new):
    return [line.replace(old, new) for line in lines]


def test_a_consistent_renaming_is_the_same_program():
    # A traced function renamed (select_leaves inlined into simulate) renames
    # its instructions; the numbering only misses it.
    after = renamed(PROGRAM, "%select_leaves", "%simulate")
    assert named_alike(after) == named_alike(PROGRAM)
    assert numbered_alike(after) != numbered_alike(PROGRAM)
    after = renamed(renamed(PROGRAM, "%fused_computation", "%fused_computation.4"),
                    "%while.7", "%while.9")
    assert named_alike(after) == named_alike(PROGRAM)


def test_a_changed_operand_opcode_or_attribute_is_another_program():
    changes = [("fusion(%select_leaves, %select_leaves)", "fusion(%while.7, %select_leaves)"),
               ("index=2", "index=1"),
               ("bitcast(%param_0)", "copy(%param_0)"),
               ("u32[32,2]{1,0} fusion", "u32[32,2]{0,1} fusion")]
    for old, new in changes:
        after = renamed(PROGRAM, old, new)
        assert after != PROGRAM, old
        assert named_alike(after) != named_alike(PROGRAM), (old, new)


def test_two_names_merged_into_one_is_another_program():
    # The two operands of the fusion were one instruction; make them two.
    after = PROGRAM[:4] + ["  %other = u32[32]{0} get-tuple-element(%while.7), index=2"] + [
        PROGRAM[4], PROGRAM[5].replace("fusion(%select_leaves, %select_leaves)",
                                       "fusion(%select_leaves, %other)"), PROGRAM[6]]
    assert named_alike(after) != named_alike(PROGRAM)
