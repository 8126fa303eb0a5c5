export const PLAN_NAMES = ['free', 'pro', 'enterprise'] as const;
export type PlanName = (typeof PLAN_NAMES)[number];

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;
const TiB = 1024 ** 4;

export interface Plan {
  name: PlanName;
  requestsPerMinute: number;
  /** Inclusive: a file of exactly this many bytes is accepted. */
  maxFileSize: number;
  storageLimit: number;
}

/** Limits per plan; MB/GB in the specification are binary (README, "API conventions"). */
export const PLANS: Record<PlanName, Plan> = {
  free: { name: 'free', requestsPerMinute: 60, maxFileSize: 100 * MiB, storageLimit: 10 * GiB },
  pro: { name: 'pro', requestsPerMinute: 300, maxFileSize: 5 * GiB, storageLimit: 1 * TiB },
  enterprise: { name: 'enterprise', requestsPerMinute: 1000, maxFileSize: 10 * GiB, storageLimit: 10 * TiB },
};

export function isPlanName(value: string): value is PlanName {
  return (PLAN_NAMES as readonly string[]).includes(value);
}
