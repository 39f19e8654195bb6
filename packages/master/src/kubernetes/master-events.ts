import type { InstanceEvents } from '../instance-manager.js';
import type { Master } from '../master.js';

/** The events an instance manager sends to a master, wired as `startMaster` wires its own. */
export function masterInstanceEvents(master: Master): InstanceEvents {
  return {
    workerLost: (workerId, reason, crashed) => {
      master.workerLost(workerId, reason, crashed);
    },
    giveUp: (code, message) => master.fail(code, message),
    jobEnded: () => master.taskManager.finished,
    requestStop: (workerId) => master.requestStop(workerId),
    workerStarted: (workerId, restarts) => master.workerStarted(workerId, restarts),
  };
}
