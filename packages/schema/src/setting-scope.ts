// Which trainers and methods read a setting, as its schema states it (`x-trainers`, `x-methods`; absent: all). Imports
// nothing, so the console bundles this file and reads the same keys from the OpenAPI document.

export interface SettingScope {
  'x-trainers'?: readonly string[];
  'x-methods'?: readonly string[];
}

/** Whether a run of this trainer and method reads the setting. */
export function settingApplies(scope: SettingScope | undefined, trainer: string, method: string | undefined): boolean {
  const trainers = scope?.['x-trainers'];
  const methods = scope?.['x-methods'];
  return (!trainers || trainers.includes(trainer)) && (!methods || method === undefined || methods.includes(method));
}
