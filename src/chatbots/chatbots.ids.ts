import { declareIdKind } from '../../libs/ids/ids';

declare module '../../libs/ids/ids' {
  interface IdPrefixes {
    chatbot: 'chatbot';
  }
}

/** `chatbot_<24 hex>`: only this module makes, parses and documents these ids. */
export const CHATBOT_ID = declareIdKind('chatbot', 'chatbot');
