import { declareIdKind } from '../../libs/ids/ids';

declare module '../../libs/ids/ids' {
  interface IdPrefixes {
    trigger: 'trigger';
  }
}

/** `trigger_<24 hex>`: only this module makes, parses and documents these ids. */
export const TRIGGER_ID = declareIdKind('trigger', 'trigger');
