"""Bad inputs to the public entry points: one row per input, each must raise
the stated exception with a message naming the argument, and none may return
a result. Also the value checks under the caller's `jit` (checks="checkify")."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import checkify

import envs
import mcts_jax
from problems.synthetic import HashedProblem, random_root_codes

A = 6
B = 4
SIMS = 8
PROBLEM = HashedProblem(num_actions=A, illegal_eighths=2)
CODES = random_root_codes(7, B)


def good():
    root, illegal = PROBLEM.root(CODES)
    return root, illegal


def tree_from(**options):
    root, illegal = good()
    return mcts_jax.uct_policy(None, jax.random.key(0), root, PROBLEM.recurrent_fn, SIMS,
                               invalid_actions=illegal, **options).search_tree


def policy_call(policy="alphazero", root_change=None, recurrent_fn=None, key=None,
                num_simulations=SIMS, **options):
    def call():
        root, illegal = good()
        if root_change:
            root = root.replace(**root_change)
        options.setdefault("invalid_actions", illegal)
        fn = {"uct": mcts_jax.uct_policy, "alphazero": mcts_jax.alphazero_policy,
              "gumbel": mcts_jax.gumbel_policy}[policy]
        return fn(None, jax.random.key(0) if key is None else key, root,
                  PROBLEM.recurrent_fn if recurrent_fn is None else recurrent_fn,
                  num_simulations, **options)
    return call


def returning(change):
    """A recurrent_fn whose output is changed by `change(output, code)`."""
    def recurrent_fn(params, key, action, code):
        output, code = PROBLEM.recurrent_fn(params, key, action, code)
        return change(output, code)
    return recurrent_fn


def search_call(**options):
    """mcts_jax.search with PUCT unless a rule is given."""
    def call():
        root, illegal = good()
        options.setdefault("root_rule", mcts_jax.puct_scores)
        return mcts_jax.search(None, jax.random.key(0), root, PROBLEM.recurrent_fn, SIMS,
                               invalid_actions=illegal, **options)
    return call


def wrong_shape_rule(tree, node, stats):
    return stats.qvalues[:, :2]


def integer_rule(tree, node, stats):
    return stats.visits


def subtree_call(action, **options):
    def call():
        return mcts_jax.get_subtree(tree_from(), action, **options)
    return call


NAN_LOGITS = jnp.zeros((B, A)).at[1, 2].set(jnp.nan)
INF_LOGITS = jnp.zeros((B, A)).at[0, 0].set(jnp.inf)

# (id, call, exception, message pattern naming the argument)
CASES = [
    # ---- root: shapes, dtypes, values
    ("root-not-RootFnOutput", lambda: mcts_jax.uct_policy(
        None, jax.random.key(0), (jnp.zeros((B, A)), jnp.zeros(B)), PROBLEM.recurrent_fn, SIMS),
     TypeError, "root must be"),
    ("prior_logits-1d", policy_call(root_change=dict(prior_logits=jnp.zeros(B))),
     ValueError, r"root\.prior_logits"),
    ("prior_logits-int", policy_call(root_change=dict(prior_logits=jnp.zeros((B, A), jnp.int32))),
     TypeError, r"root\.prior_logits"),
    ("prior_logits-nan", policy_call(root_change=dict(prior_logits=NAN_LOGITS)),
     ValueError, r"root\.prior_logits has NaN"),
    ("prior_logits-plus-inf", policy_call(root_change=dict(prior_logits=INF_LOGITS)),
     ValueError, r"root\.prior_logits has NaN or \+inf"),
    ("value-wrong-shape", policy_call(root_change=dict(value=jnp.zeros((B, 1)))),
     ValueError, r"root\.value must have shape"),
    ("value-int", policy_call(root_change=dict(value=jnp.zeros(B, jnp.int32))),
     TypeError, r"root\.value must be floating"),
    ("value-nan", policy_call(root_change=dict(value=jnp.zeros(B).at[2].set(jnp.nan))),
     ValueError, r"root\.value has NaN"),
    ("value-inf", policy_call(root_change=dict(value=jnp.zeros(B).at[0].set(-jnp.inf))),
     ValueError, r"root\.value has NaN or infinite"),
    ("embedding-no-batch-axis", policy_call(root_change=dict(embedding=jnp.zeros(3, jnp.uint32))),
     ValueError, r"root\.embedding"),
    ("invalid_actions-wrong-shape", policy_call(invalid_actions=np.zeros((B, A - 1), bool)),
     ValueError, "invalid_actions must have shape"),
    ("invalid_actions-not-bool", policy_call(invalid_actions=np.zeros((B, A), np.int32)),
     TypeError, "invalid_actions must be bool"),
    ("invalid_actions-all-illegal-row",
     policy_call(invalid_actions=np.eye(B, A, dtype=bool) | (np.arange(B) == 2)[:, None]),
     ValueError, "invalid_actions marks every action illegal in root rows \\[2\\]"),
    # ---- options
    ("num_simulations-0", policy_call(num_simulations=0), ValueError, "num_simulations"),
    ("num_simulations-float", policy_call(num_simulations=8.0), TypeError, "num_simulations"),
    ("num_simulations-array", policy_call(num_simulations=jnp.int32(8)), TypeError,
     "num_simulations"),
    ("max_nodes-too-small", policy_call(max_nodes=SIMS), ValueError, "max_nodes=8 is too small"),
    ("max_nodes-float", policy_call(max_nodes=100.0), TypeError, "max_nodes"),
    ("max_depth-0", policy_call(max_depth=0), ValueError, "max_depth"),
    ("final_action-unknown", policy_call(final_action="best"), ValueError, "final_action"),
    ("temperature-negative", policy_call(temperature=-1.0), ValueError, "temperature"),
    ("temperature-nan", policy_call(temperature=float("nan")), ValueError, "temperature"),
    ("temperature-vector", policy_call(temperature=jnp.ones(B)), ValueError, "temperature"),
    ("value_range-0-2", policy_call(value_range=(0.0, 2.0)), ValueError, "value_range"),
    ("value_range-not-pair", policy_call(value_range="unit"), ValueError, "value_range"),
    ("q_transform-removed", policy_call(q_transform="raw"), TypeError,
     "q_transform, a name, was removed: pass the function"),
    ("dirichlet_fraction-above-1", policy_call(dirichlet_fraction=1.5), ValueError,
     "dirichlet_fraction"),
    ("dirichlet_fraction-nan", policy_call(dirichlet_fraction=float("nan")), ValueError,
     "dirichlet_fraction"),
    ("dirichlet_alpha-0", policy_call(dirichlet_alpha=0.0), ValueError, "dirichlet_alpha"),
    ("pb_c_base-0", policy_call(pb_c_base=0.0), ValueError, "pb_c_base"),
    ("pb_c_init-string", policy_call(pb_c_init="1.25"), TypeError, "pb_c_init"),
    ("uct_c-negative", policy_call("uct", uct_c=-1.0), ValueError, "uct_c"),
    ("uct_c-inf", policy_call("uct", uct_c=float("inf")), ValueError, "uct_c"),
    ("gumbel_scale-nan", policy_call("gumbel", invalid_actions=None, gumbel_scale=float("nan")),
     ValueError, "gumbel_scale"),
    ("gumbel_scale-negative", policy_call("gumbel", gumbel_scale=-1.0), ValueError,
     "gumbel_scale"),
    ("max_num_considered_actions-0", policy_call("gumbel", max_num_considered_actions=0),
     ValueError, "max_num_considered_actions"),
    ("value_scale-negative", policy_call("gumbel", value_scale=-0.1), ValueError, "value_scale"),
    ("maxvisit_init-nan", policy_call("gumbel", maxvisit_init=float("nan")), ValueError,
     "maxvisit_init"),
    ("max_children-0", policy_call(max_children=0), ValueError, "max_children"),
    ("max_children-above-A", policy_call(max_children=A + 1), ValueError, "max_children"),
    ("max_children-float", policy_call(max_children=2.0), TypeError, "max_children"),
    ("replay_embeddings-string", policy_call(replay_embeddings="yes"), TypeError,
     "replay_embeddings"),
    ("solver-string", policy_call(solver="yes"), TypeError, "solver"),
    ("expand_all-none", policy_call("uct", expand_all=None), TypeError, "expand_all"),
    ("checks-unknown", policy_call(checks="strict"), ValueError, "checks"),
    ("rng_key-int", policy_call(key=0), TypeError, "rng_key"),
    ("rng_key-batched", policy_call(key=jax.random.split(jax.random.key(0), B)), ValueError,
     "rng_key"),
    # ---- recurrent_fn
    ("recurrent_fn-not-callable", lambda: mcts_jax.uct_policy(
        None, jax.random.key(0), good()[0], "step", SIMS), TypeError, "recurrent_fn must be"),
    ("recurrent_fn-wrong-A", policy_call(recurrent_fn=returning(
        lambda o, c: (o.replace(prior_logits=o.prior_logits[:, :3]), c))),
     ValueError, "recurrent_fn returned prior_logits of shape"),
    ("recurrent_fn-wrong-B", policy_call(recurrent_fn=returning(
        lambda o, c: (o.replace(value=o.value[:2]), c))),
     ValueError, "recurrent_fn returned value of shape"),
    ("recurrent_fn-not-a-pair", policy_call(recurrent_fn=returning(lambda o, c: o)),
     TypeError, "recurrent_fn must return a pair"),
    ("recurrent_fn-returns-tuple-output", policy_call(recurrent_fn=returning(
        lambda o, c: ((o.reward, o.discount, o.prior_logits, o.value), c))),
     TypeError, "recurrent_fn must return a mcts_jax.RecurrentFnOutput"),
    ("recurrent_fn-embedding-dtype", policy_call(recurrent_fn=returning(
        lambda o, c: (o, c.astype(jnp.int32)))),
     ValueError, "recurrent_fn returned an embedding"),
    ("recurrent_fn-invalid_actions-int", policy_call(recurrent_fn=returning(
        lambda o, c: (o.replace(invalid_actions=o.invalid_actions.astype(jnp.int32)), c))),
     TypeError, "recurrent_fn returned invalid_actions"),
    # ---- tree= from another configuration
    ("tree-not-a-Tree", policy_call(tree={"node_visits": 0}), TypeError, "tree must be"),
    ("tree-other-B", lambda: mcts_jax.uct_policy(
        None, jax.random.key(0), PROBLEM.root(CODES[:2])[0], PROBLEM.recurrent_fn, SIMS,
        tree=tree_from()), ValueError, "tree has B=4 rows but root has B=2"),
    ("tree-other-A", lambda: mcts_jax.uct_policy(
        None, jax.random.key(0), HashedProblem(num_actions=5).root(CODES)[0],
        HashedProblem(num_actions=5).recurrent_fn, SIMS, tree=tree_from()),
     ValueError, "tree has A=6"),
    ("tree-other-max_nodes", policy_call("uct", tree=tree_from(), max_nodes=50), ValueError,
     "tree has max_nodes"),
    ("tree-other-layout", policy_call("uct", tree=tree_from(), max_children=3), ValueError,
     "tree has max_children"),
    ("tree-other-value_range", policy_call("uct", tree=tree_from(), value_range=(0.0, 1.0)),
     ValueError, "value_range"),
    ("tree-other-replay", policy_call("uct", tree=tree_from(), replay_embeddings=True),
     ValueError, "replay_embeddings"),
    ("tree-other-embedding", policy_call(
        "uct", tree=tree_from(), root_change=dict(embedding=jnp.zeros((B, 2), jnp.uint32))),
     ValueError, "tree.embeddings do not match root.embedding"),
    # ---- get_subtree / reset_tree / select_rows
    ("get_subtree-action-out-of-range", subtree_call(jnp.array([0, 1, A, 2])), ValueError,
     r"action has ids outside \[0, A\)"),
    ("get_subtree-action-negative-checkify",
     subtree_call(jnp.array([0, -1, 0, 2]), checks="checkify"), checkify.JaxRuntimeError,
     r"action has ids outside \[0, A\)"),
    ("get_subtree-action-wrong-shape", subtree_call(jnp.zeros((B, 1), jnp.int32)), ValueError,
     "action must have shape"),
    ("get_subtree-action-float", subtree_call(jnp.zeros(B)), TypeError,
     "action must be an integer"),
    ("get_subtree-not-a-tree", lambda: mcts_jax.get_subtree("tree", jnp.zeros(B, jnp.int32)),
     TypeError, "tree must be a mcts_jax.Tree"),
    ("get_subtree-checks-unknown", subtree_call(jnp.zeros(B, jnp.int32), checks=True),
     ValueError, "checks must be"),
    ("reset_tree-mask-wrong-shape", lambda: mcts_jax.reset_tree(tree_from(), jnp.ones(3, bool)),
     ValueError, "mask must have shape"),
    ("reset_tree-mask-float", lambda: mcts_jax.reset_tree(tree_from(), jnp.ones(B)),
     TypeError, "mask must be a bool"),
    ("select_rows-other-config", lambda: mcts_jax.select_rows(
        jnp.ones(B, bool), tree_from(), tree_from(max_nodes=40)),
     ValueError, "if_true and if_false must be trees of the same configuration"),
    ("select_rows-not-a-tree", lambda: mcts_jax.select_rows(jnp.ones(B, bool), tree_from(), 0),
     TypeError, "if_false must be a mcts_jax.Tree"),
    # ---- the composable search: rules and Q transforms
    ("search-rule-not-callable", search_call(root_rule="puct"), TypeError,
     "root_rule must be a function"),
    ("search-interior-rule-not-callable", search_call(interior_rule=3), TypeError,
     "interior_rule must be a function"),
    ("search-rule-wrong-shape", search_call(root_rule=wrong_shape_rule), ValueError,
     r"root_rule returned scores of shape \(4, 2\); expected \(B, K\) = \(4, 6\)"),
    ("search-interior-rule-wrong-shape", search_call(interior_rule=wrong_shape_rule),
     ValueError, "interior_rule returned scores of shape"),
    ("search-rule-integer-scores", search_call(root_rule=integer_rule), TypeError,
     "root_rule returned scores of dtype int32; expected a float dtype"),
    ("search-rule-missing-constant", search_call(
        root_rule=functools.partial(mcts_jax.gumbel_root_scores)), TypeError,
     "root_rule cannot be called as root_rule\\(tree, node, stats\\).*num_simulations"),
    ("search-rule-unknown-constant", search_call(
        root_rule=functools.partial(mcts_jax.puct_scores, c_puct=2.0)), TypeError,
     "root_rule.*c_puct"),
    ("search-solver-without-terminals", search_call(solver=True, stop_at_terminal=False),
     ValueError, "solver=True needs stop_at_terminal=True"),
    ("search-loop_fn-not-callable", search_call(loop_fn=10), TypeError, "loop_fn must be"),
    ("simulations_per_step-zero", policy_call("uct", simulations_per_step=0), ValueError,
     "simulations_per_step must be >= 1"),
    ("simulations_per_step-float", policy_call("gumbel", simulations_per_step=2.0), TypeError,
     "simulations_per_step must be a Python int"),
    ("simulations_per_step-with-expand_all", policy_call("uct", simulations_per_step=2,
                                                         expand_all=True),
     ValueError, "simulations_per_step > 1 cannot be combined with expand_all"),
    ("simulations_per_step-with-mctx-numbering", search_call(simulations_per_step=2,
                                                             node_per_simulation=True),
     ValueError, "simulations_per_step > 1 cannot be combined with node_per_simulation"),
    ("steering-unknown", policy_call("alphazero", simulations_per_step=2, steering="loss"),
     ValueError, "steering must be 'unobserved' or 'virtual_loss'"),
    ("qtransform-not-callable", policy_call(qtransform="min_max"), TypeError,
     "qtransform must be a function"),
    ("qtransform-missing-kwargs", policy_call(
        qtransform=functools.partial(mcts_jax.qtransform_by_min_max, min_value=-1.0)),
     TypeError, "qtransform cannot be called.*max_value"),
    ("qtransform-unknown-kwarg", policy_call(
        qtransform=functools.partial(mcts_jax.qtransform_by_parent_and_siblings, eps=1.0)),
     TypeError, "qtransform.*eps"),
    ("gumbel-qtransform-wrong-arity", policy_call(
        "gumbel", qtransform=lambda tree: tree.priors), TypeError,
     r"qtransform cannot be called as qtransform\(tree, node, stats\)"),
    ("gumbel-qtransform-mctx-form", policy_call(
        "gumbel", qtransform=lambda tree, node_index: tree.priors), TypeError,
     r"mctx's form of a Q transform: mcts_jax.mctx_compat.our_qtransform\(fn\)"),
    ("muzero-qtransform-wrong-arity", lambda: mcts_jax.muzero_policy(
        None, jax.random.key(0), good()[0], PROBLEM.recurrent_fn, SIMS,
        qtransform=lambda tree: tree), TypeError,
     r"qtransform cannot be called as qtransform\(tree, node, stats\) \(ours\) nor as "
     r"qtransform\(tree, node_index\) \(mctx's form\)"),
    ("muzero-qtransform-not-callable", lambda: mcts_jax.muzero_policy(
        None, jax.random.key(0), good()[0], PROBLEM.recurrent_fn, SIMS, qtransform="min_max"),
     TypeError, "qtransform must be a function"),
    # ---- games and memory
    ("envs.make-unknown-game", lambda: envs.make("tictactoe"), ValueError,
     "unknown game 'tictactoe'; known games: tic_tac_toe"),
    ("tree_memory-batch_size-0", lambda: mcts_jax.memory.tree_memory(
        jnp.zeros(3), A, 0, 10), ValueError, "batch_size"),
    ("tree_memory-max_children-above-A", lambda: mcts_jax.memory.tree_memory(
        jnp.zeros(3), A, 2, 10, max_children=A + 1), ValueError, "max_children"),
    ("game.tree_memory-max_nodes-0", lambda: envs.make("tic_tac_toe").tree_memory(2, 0),
     ValueError, "max_nodes"),
]


@pytest.mark.parametrize("call,error,pattern", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_bad_input_raises_a_clear_error(call, error, pattern):
    with pytest.raises(error, match=pattern):
        result = call()
        pytest.fail(f"returned a result: {type(result).__name__}")  # never reached


def test_the_table_has_unique_ids_and_at_least_twenty_rows():
    ids = [c[0] for c in CASES]
    assert len(ids) == len(set(ids)) >= 20


# ---- value checks: host, off, checkify --------------------------------------

def _nan_value_fn(params, key, action, code):
    output, code = PROBLEM.recurrent_fn(params, key, action, code)
    return output.replace(value=jnp.where(action == 2, jnp.nan, output.value)), code


def _inf_logits_fn(params, key, action, code):
    output, code = PROBLEM.recurrent_fn(params, key, action, code)
    return output.replace(prior_logits=output.prior_logits.at[:, 0].set(jnp.inf)), code


def with_default_emitters(call):
    """`call()` (a search) inside one jit compiled with XLA's default CPU
    fusion emitters: tests/conftest.py gives the suite the older ones
    (faster to compile), which round the checkify program's floats apart
    from the plain one's; a user's program gets the defaults."""
    from jax.experimental import checkify
    checked = checkify.checkify(call, errors=checkify.user_checks)
    error, output = jax.jit(checked).lower().compile(
        compiler_options={"xla_cpu_use_fusion_emitters": True})()
    error.throw()
    return output


@pytest.mark.parametrize("policy", ["alphazero", "gumbel"])
def test_checks_modes_give_the_same_search_bit_for_bit(policy):
    outputs = [with_default_emitters(policy_call(policy, checks=mode))
               for mode in ("host", "off", "checkify")]
    for other in outputs[1:]:
        for x, y in zip(jax.tree.leaves(outputs[0]), jax.tree.leaves(other)):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_checks_off_skips_value_checks():
    out = policy_call(root_change=dict(value=jnp.zeros(B).at[1].set(jnp.nan)), checks="off")()
    assert out.action.shape == (B,)


@pytest.mark.parametrize("fn,field", [(_nan_value_fn, "value"),
                                      (_inf_logits_fn, "prior_logits")])
def test_checkify_reports_bad_values_from_recurrent_fn(fn, field):
    with pytest.raises(checkify.JaxRuntimeError,
                       match=f"recurrent_fn returned .*{field}.* during the search"):
        policy_call("uct", recurrent_fn=fn, checks="checkify")()
    # The host mode cannot see inside the search.
    policy_call("uct", recurrent_fn=fn, checks="host")()


def test_checkify_reports_root_errors_under_the_callers_jit():
    root, illegal = good()

    def user_step(key, root, illegal):
        return mcts_jax.alphazero_policy(None, key, root, PROBLEM.recurrent_fn, SIMS,
                                         invalid_actions=illegal, checks="checkify").action

    checked = jax.jit(checkify.checkify(user_step))
    err, action = checked(jax.random.key(0), root, illegal)
    assert err.get() is None and action.shape == (B,)
    err, _ = checked(jax.random.key(0), root.replace(value=root.value.at[3].set(jnp.nan)),
                     illegal)
    assert "root.value has NaN or infinite entries (first in row 3)" in err.get()
    err, _ = checked(jax.random.key(0), root, illegal.at[1].set(True))
    assert "every action illegal in root row 1" in err.get()
    err, _ = checked(jax.random.key(0), root.replace(prior_logits=NAN_LOGITS), illegal)
    assert "root.prior_logits has NaN" in err.get()
    with pytest.raises(checkify.JaxRuntimeError, match=r"root\.value"):
        err, _ = checked(jax.random.key(0), root.replace(value=root.value * jnp.inf), illegal)
        err.throw()
    # Without checkify around the caller, JAX refuses to stage the check.
    with pytest.raises(ValueError, match="checkify"):
        jax.jit(user_step)(jax.random.key(0), root, illegal)


def test_checkify_reports_nan_from_recurrent_fn_under_the_callers_jit():
    root, illegal = good()

    def user_step(key, root):
        return mcts_jax.gumbel_policy(None, key, root, _nan_value_fn, SIMS,
                                      invalid_actions=illegal, checks="checkify").action

    err, _ = jax.jit(checkify.checkify(user_step))(jax.random.key(0), root)
    assert "recurrent_fn returned a NaN or infinite value during the search" in err.get()


def test_host_value_checks_are_skipped_under_the_callers_jit():
    """Documented: with checks="host" a traced NaN is not seen (use checkify)."""
    root, illegal = good()

    @jax.jit
    def user_step(key, root):
        return mcts_jax.uct_policy(None, key, root, PROBLEM.recurrent_fn, SIMS,
                                   invalid_actions=illegal).action

    assert user_step(jax.random.key(0), root.replace(value=root.value * jnp.nan)).shape == (B,)
