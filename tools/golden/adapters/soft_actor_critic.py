"""soft_actor_critic: TorchBench's learn_standard() on a fixed replay batch."""

import copy
import math

import torch

import fill
import reference

MODEL = "soft_actor_critic"
REFERENCE = ("torchbenchmark/models/soft_actor_critic: SACAgent, learn_standard, soft_update"
             " (optimizers as Model.__init__ builds them)")
MODE = "train"
BATCH_SIZE = 256
DTYPE = "float32"
NOTES = [
    "the reference Model needs gym's Pendulum-v1 (not installed): its networks, optimizers"
    " (Adam 1e-4; log_alpha Adam betas 0.5/0.999) and learn_standard() are used directly",
    "replay batch filled (state, action, next_state u; reward -8 + 8 u; done in {0, 1}); the two"
    " rsample() draws take filled noise (noise.next, noise.actor) instead of randn",
    "target_agent is filled by its own names, so it differs from agent (both sides alike)",
    "eval_action: SACAgent.forward's squashed mean, clamped; grad:*: each optimizer's edge"
    " gradients before its step; after_learn:*, after_soft_update:*: after one learn_standard"
    " and the critics' soft update",
]


class _FixedBuffer:
    """ReplayBuffer.sample's interface, returning one filled batch."""

    def __init__(self, batch):
        self.batch = batch

    def sample(self, batch_size):
        assert batch_size == self.batch[0].shape[0]
        return self.batch


def compute(root):
    package = reference.load_model_package(root, MODEL, absent=("gym", "tensorboardX", "tqdm"))
    cfg = package.SACConfig()
    agent = package.SACAgent(3, 1, cfg.log_std_low, cfg.log_std_high, "cpu")
    target_agent = copy.deepcopy(agent)
    # The C++ port's module tree (agent, target_agent, log_alpha) names every
    # tensor the fill sees.
    nets = torch.nn.Module()
    for holder_name, holder in (("agent", agent), ("target_agent", target_agent)):
        module = torch.nn.Module()
        module.actor, module.critic1, module.critic2 = holder.actor, holder.critic1, holder.critic2
        setattr(nets, holder_name, module)
    nets.log_alpha = torch.nn.Parameter(torch.Tensor([math.log(cfg.init_alpha)]))
    fill.deterministic_fill(nets)
    log_alpha = nets.log_alpha

    critic_optimizer = torch.optim.Adam(
        list(agent.critic1.parameters()) + list(agent.critic2.parameters()),
        lr=cfg.critic_lr, weight_decay=cfg.critic_l2, betas=(0.9, 0.999))
    actor_optimizer = torch.optim.Adam(
        agent.actor.parameters(), lr=cfg.actor_lr, weight_decay=cfg.actor_l2, betas=(0.9, 0.999))
    log_alpha_optimizer = torch.optim.Adam([log_alpha], lr=cfg.alpha_lr, betas=(0.5, 0.999))

    b = BATCH_SIZE
    state = fill.deterministic_tensor("state", (b, 3))
    batch = (state,
             fill.deterministic_tensor("action", (b, 1)),
             fill.deterministic_tensor("reward", (b, 1), torch.float32, -8.0, 8.0),
             fill.deterministic_tensor("next_state", (b, 3)),
             fill.deterministic_long("done", (b, 1), 0, 2).to(torch.int32))
    results = {}
    with torch.no_grad():
        results["eval_action"] = agent.actor(state).mean.clamp(-1.0, 1.0)

    def on_step(prefix, module):
        def hook(optimizer, args, kwargs):
            if module is None:
                results["grad:log_alpha"] = log_alpha.grad.detach().clone()
            else:
                reference.record_edges(module, prefix, results, gradients=True)
        return hook

    handles = [critic_optimizer.register_step_pre_hook(on_step("grad:critic1.", agent.critic1)),
               actor_optimizer.register_step_pre_hook(on_step("grad:actor.", agent.actor)),
               log_alpha_optimizer.register_step_pre_hook(on_step(None, None))]
    noises = iter([fill.deterministic_tensor("noise.next", (b, 1)),
                   fill.deterministic_tensor("noise.actor", (b, 1))])
    rsample = torch.distributions.Normal.rsample
    torch.distributions.Normal.rsample = lambda self, sample_shape=torch.Size(): (
        self.loc + next(noises) * self.scale)
    try:
        package.learn_standard(
            _FixedBuffer(batch), target_agent, agent, actor_optimizer, critic_optimizer,
            log_alpha_optimizer, target_entropy=-1, batch_size=b, log_alpha=log_alpha,
            gamma=cfg.gamma, critic_clip=cfg.critic_clip, actor_clip=cfg.actor_clip,
            update_policy=True, device="cpu")
    finally:
        torch.distributions.Normal.rsample = rsample
        for handle in handles:
            handle.remove()
    package.soft_update(target_agent.critic1, agent.critic1, cfg.tau)
    package.soft_update(target_agent.critic2, agent.critic2, cfg.tau)
    reference.record_edges(nets.agent, "after_learn:", results)
    results["after_learn:log_alpha"] = log_alpha.detach().clone()
    reference.record_edges(target_agent.critic1, "after_soft_update:critic1.", results)
    return results


def prepare(root, name, mode, batch_size, device, stack):
    raise RuntimeError("its train() and eval() step a gym environment (gym.make of args.env_id) and"
                       " gym is not installed: a stand-in environment would not be TorchBench's"
                       " step")
