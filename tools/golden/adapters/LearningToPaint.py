"""LearningToPaint: TorchBench's DDPG agent and batched canvas env, one
select_action, decode, env step and observe() on filled canvases."""

import importlib

import numpy as np
import torch

import fill
import reference

MODEL = "LearningToPaint"
REFERENCE = ("torchbenchmark/models/LearningToPaint: DDPG (actor ResNet, critic ResNet_wobn),"
             " Renderer FCN, fastenv/Paint step, DDPG.select_action, decode, observe")
MODE = "train"
BATCH_SIZE = 2
DTYPE = "float32"
STEPNUM = 3
NOTES = [
    "cv2 is a stand-in (never used on this path); the DDPG and fastenv are built as Model does"
    " (max_step 40, rmsize 800) with env_batch 2 and an FCN Decoder",
    "filled by the names of a root holding actor, actor_target, critic, critic_target and"
    " Decoder; float32 (DDPG.play casts the state to float32)",
    "the env's canvas and target are filled uint8 (canvas, gt: integers in [0, 256)), stepnum 3,"
    " lastdis = ini_dis = cal_dis() of those; the agent's state is that observation",
    "action: select_action (actor in eval mode, noise 0); decode: decode(action, canvas / 255);"
    " env.*: fastenv.step(action)'s observation (as float) and reward; memory.*: the rpm"
    " entries observe() stored, stacked (uint8 states as float)",
]


def compute(root):
    reference.load_model_package(root, MODEL, absent=("cv2",))
    base = "torchbenchmark.models.LearningToPaint.baseline."
    ddpg = importlib.import_module(base + "DRL.ddpg")
    multi = importlib.import_module(base + "DRL.multi")
    renderer = importlib.import_module(base + "Renderer.model")

    b = BATCH_SIZE
    decoder = renderer.FCN()
    # load_data only files the images; the golden path sets the env's
    # canvases itself, so a placeholder list stands in for them.
    env = multi.fastenv(max_episode_length=40, env_batch=b, images=torch.zeros(2000, 1),
                        device="cpu", Decoder=decoder)
    agent = ddpg.DDPG(batch_size=b, env_batch=b, max_step=40, tau=0.001,
                      discount=0.95 ** 5, rmsize=800, device="cpu", Decoder=decoder)

    nets = torch.nn.Module()
    nets.actor, nets.actor_target = agent.actor, agent.actor_target
    nets.critic, nets.critic_target = agent.critic, agent.critic_target
    nets.Decoder = decoder
    fill.deterministic_fill(nets)

    paint = env.env
    image = (b, 3, 128, 128)
    paint.test = False
    env.test = False
    paint.canvas = fill.deterministic_long("canvas", image, 0, 256).to(torch.uint8)
    paint.gt = fill.deterministic_long("gt", image, 0, 256).to(torch.uint8)
    paint.imgid = [0] * b
    paint.stepnum = STEPNUM
    paint.lastdis = paint.ini_dis = paint.cal_dis()
    observation = paint.observation()
    agent.reset(observation, 0.0)

    results = {}
    action = agent.select_action(observation, noise_factor=0.0)
    results["action"] = torch.from_numpy(np.array(action))
    with torch.no_grad():
        results["decode"] = ddpg.decode(torch.tensor(action), paint.canvas.float() / 255,
                                        decoder)
    ob, reward, done, _ = env.step(action)
    results["env.observation"] = ob.float()
    results["env.reward"] = torch.from_numpy(np.array(reward))
    agent.observe(reward, ob, done, 0)
    entries = agent.memory.buffer
    assert len(entries) == b
    for key, i in (("state", 0), ("action", 1), ("reward", 2), ("next_state", 3),
                   ("done", 4)):
        results["memory." + key] = torch.stack([e[i] for e in entries]).float()
    return results
