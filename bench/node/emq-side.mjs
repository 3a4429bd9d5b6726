export class EmqSide { name = "emq"; }
