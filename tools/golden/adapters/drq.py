"""drq: TorchBench's DRQAgent, its eval action and one update() on a fixed
replay batch."""

import importlib
import sys
import types

import torch

import fill
import reference
import stand_ins

MODEL = "drq"
REFERENCE = ("torchbenchmark/models/drq: DRQAgent (Actor, Critic, Encoder), act's mean,"
             " update (update_critic, update_actor_and_alpha, soft_update_params)")
MODE = "train"
BATCH_SIZE = 1
DTYPE = "float64"
OBS_SHAPE = (27, 84, 84)  # MockEnv's 9x84x84 frames through FrameStack(k=3)
REPLAY_BATCH = 4
UPDATE_STEP = 2  # even: the actor, alpha and target updates all run
NOTES = [
    "the reference Model needs gym, kornia and scikit-image (not installed; stand-ins for the"
    " imports): DRQAgent is built from DRQConfig with obs (27, 84, 84) and action (1,), and its"
    " update() gets a fixed replay batch",
    "filled by the names of a root holding critic, actor and critic_target (the tied conv layers"
    " take critic's names, where the C++ port registers them), log_alpha float64 as in the"
    " reference; run in float64 (the float32 fill converted)",
    "replay batch of 4 filled (obs, next_obs and their _aug copies 127.5 + 127.5 u: already"
    " augmented, so kornia's random crop is not part of the check; action, reward u; not_done in"
    " {0, 1}); the three rsample() draws take filled noise (noise.next, noise.next_aug,"
    " noise.actor) instead of randn",
    "eval_action: the actor's squashed mean on eval_obs, clamped; critic_loss, actor_loss and"
    " grad:*: before each optimizer's step; after_update:*: after update(step=2)",
]


class _FixedBuffer:
    def __init__(self, batch):
        self.batch = batch

    def sample(self, batch_size):
        assert batch_size == self.batch[0].shape[0]
        return self.batch


def compute(root):
    reference.load_model_package(
        root, MODEL,
        absent=("gym", "kornia", "kornia.augmentation", "skimage", "skimage.util",
                "skimage.util.shape"))
    drq = importlib.import_module("torchbenchmark.models.drq.drq")
    config = importlib.import_module("torchbenchmark.models.drq.config")
    cfg = config.DRQConfig()
    cfg.batch_size = REPLAY_BATCH
    agent = drq.DRQAgent(cfg, "cpu", OBS_SHAPE, (1,), [-1.0, 1.0])

    nets = torch.nn.Module()
    nets.critic, nets.actor, nets.critic_target = agent.critic, agent.actor, agent.critic_target
    nets.log_alpha = torch.nn.Parameter(agent.log_alpha.detach().clone())
    fill.deterministic_fill(nets)
    nets.double()
    with torch.no_grad():
        agent.log_alpha.copy_(nets.log_alpha)
    # The optimizers were built on the float32 parameters that .double()
    # replaced: rebuild them as DRQAgent does.
    agent.actor_optimizer = torch.optim.Adam(agent.actor.parameters(), lr=cfg.lr)
    agent.critic_optimizer = torch.optim.Adam(agent.critic.parameters(), lr=cfg.lr)
    agent.log_alpha_optimizer = torch.optim.Adam([agent.log_alpha], lr=cfg.lr)

    def filled(name, shape, offset=0.0, scale=1.0):
        return fill.deterministic_tensor(name, shape, torch.float32, offset, scale).double()

    b = REPLAY_BATCH
    image = (b,) + OBS_SHAPE
    obs = filled("obs", image, 127.5, 127.5)
    batch = (obs, filled("action", (b, 1)), filled("reward", (b, 1)),
             filled("next_obs", image, 127.5, 127.5),
             fill.deterministic_long("not_done", (b, 1), 0, 2).double(),
             filled("obs_aug", image, 127.5, 127.5),
             filled("next_obs_aug", image, 127.5, 127.5))

    results = {}
    with torch.no_grad():
        eval_obs = filled("eval_obs", (1,) + OBS_SHAPE, 127.5, 127.5)
        results["eval_action"] = agent.actor(eval_obs).mean.clamp(-1.0, 1.0)

    named = dict(nets.named_parameters())

    def record_grads(names):
        def hook(optimizer, args, kwargs):
            for name in names:
                results["grad:" + name] = named[name].grad.detach().clone()
        return hook

    def record_alpha_grad(optimizer, args, kwargs):
        results["grad:log_alpha"] = agent.log_alpha.grad.detach().clone()

    handles = [
        agent.critic_optimizer.register_step_pre_hook(record_grads(
            ["critic.encoder.convs.0.weight", "critic.encoder.head.0.weight",
             "critic.Q1.0.weight", "critic.Q2.4.bias"])),
        agent.actor_optimizer.register_step_pre_hook(record_grads(
            ["actor.encoder.head.0.weight", "actor.trunk.0.weight", "actor.trunk.4.bias"])),
        agent.log_alpha_optimizer.register_step_pre_hook(record_alpha_grad),
    ]
    # The losses are locals of update_critic / update_actor_and_alpha: read
    # them where backward() is called on them.
    losses = iter(["critic_loss", "actor_loss", None])
    backward = torch.Tensor.backward

    def recording_backward(self, *args, **kwargs):
        key = next(losses)
        if key is not None:
            results[key] = self.detach().clone()
        return backward(self, *args, **kwargs)

    noises = iter([filled("noise.next", (b, 1)), filled("noise.next_aug", (b, 1)),
                   filled("noise.actor", (b, 1))])
    rsample = torch.distributions.Normal.rsample
    torch.distributions.Normal.rsample = lambda self, sample_shape=torch.Size(): (
        self.loc + next(noises) * self.scale)
    torch.Tensor.backward = recording_backward
    try:
        agent.update(_FixedBuffer(batch), None, UPDATE_STEP)
    finally:
        torch.distributions.Normal.rsample = rsample
        torch.Tensor.backward = backward
        for handle in handles:
            handle.remove()
    for name in ("actor.trunk.4.weight", "actor.encoder.head.1.weight",
                 "critic.encoder.convs.0.weight", "critic.Q1.0.weight",
                 "critic_target.encoder.convs.3.bias", "critic_target.Q2.4.weight"):
        results["after_update:" + name] = named[name].detach().clone()
    results["after_update:log_alpha"] = agent.log_alpha.detach().clone()
    return results


def _gym_stand_in():
    """What drq uses of gym: spaces.Box (shape, dtype, low, high, seed,
    sample as gym's: uniform over a bounded float box, integers in
    [low, high] otherwise) and Wrapper (the wrapped env's attributes)."""
    import types

    import numpy as np

    class Box:
        def __init__(self, low, high, shape=None, dtype=np.float32):
            self.dtype = np.dtype(dtype)
            self.shape = tuple(shape)
            self.low = np.full(self.shape, low, dtype=self.dtype)
            self.high = np.full(self.shape, high, dtype=self.dtype)
            self.np_random = np.random.default_rng()

        def seed(self, seed=None):
            self.np_random = np.random.default_rng(seed)

        def sample(self):
            if self.dtype.kind == "f":
                return self.np_random.uniform(self.low, self.high, self.shape).astype(self.dtype)
            return self.np_random.integers(self.low, self.high.astype(np.int64) + 1,
                                           self.shape).astype(self.dtype)

    class Wrapper:
        def __init__(self, env):
            self.env = env

        def __getattr__(self, name):
            if name.startswith("_"):
                raise AttributeError(name)
            return getattr(self.env, name)

    spaces = types.ModuleType("gym.spaces")
    spaces.Box = Box
    gym = types.ModuleType("gym")
    gym.spaces, gym.Wrapper = spaces, Wrapper
    return gym


def prepare(root, name, mode, batch_size, device, stack):
    import pickle

    import numpy as np

    gym = _gym_stand_in()
    # gym (MockEnv's spaces and FrameStack's Wrapper, which the step uses:
    # stand-ins with gym's behaviour) and skimage (view_as_windows, for a
    # random crop the step does not run; kornia's crop is used).
    stack.enter_context(stand_ins.attribute(sys.modules, "gym", gym))
    stack.enter_context(stand_ins.attribute(sys.modules, "gym.spaces", gym.spaces))
    package = reference.load_model_package(root, name, absent=("skimage", "skimage.util",
                                                               "skimage.util.shape"))
    # obs.pkl (Git LFS, absent): make_env reads only its shape, one
    # 9x84x84 uint8 observation (MockEnv's observation space), and draws
    # the observation itself.
    stack.enter_context(stand_ins.attribute(pickle, "load",
                                            lambda f: np.zeros((9, 84, 84), dtype=np.uint8)))
    return package.Model(test=mode, device=device, batch_size=batch_size)
